// The crate's generated-test target: cargo builds tests/auto/main.rs, and
// each authored file joins it through a mod line.
mod s1_acked_put_survives;
