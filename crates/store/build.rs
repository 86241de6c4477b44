//! Rebuilds the crate when a migration is added or changed: `sqlx::migrate!`
//! embeds the `migrations` folders at compile time, and cargo would not
//! otherwise notice a new file there (a binary built before it keeps the old
//! list, and refuses a database a newer one migrated).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
