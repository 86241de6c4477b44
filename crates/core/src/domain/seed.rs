//! Seeds derived from a run's base seed, so that every random choice of an
//! epoch or a task replays from the base seed and a number alone.

/// Each epoch's own seed, derived from the base seed (SplitMix64 step), so an
/// epoch's random choices replay from the base seed and the epoch number alone.
pub fn epoch_seed(base: u64, epoch_num: i64) -> u64 {
    let mut z = base.wrapping_add((epoch_num as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
