//! A small seeded generator for tests that sweep many generated inputs.

/// Xorshift64: a stream of 64-bit words from `seed` (not zero), the same on every run.
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
