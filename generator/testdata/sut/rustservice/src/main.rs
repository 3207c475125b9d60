//! ringlogd: one replica of a ringlog cluster.
use std::env;

mod config;

#[tokio::main]
async fn main() {
    let path = env::args().nth(2).unwrap_or_else(|| "/etc/ringlog/config.toml".into());
    let cfg = config::load(&path).expect("load config");
    println!("ringlogd listening on {}", cfg.listen);
}
