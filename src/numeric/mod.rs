//! TEMPORARY
pub mod alm;
pub mod problem;
pub use problem::*;
