//! A tiny key-value store: the Rust SUT of dstgen author's tests.
use std::collections::HashMap;

/// An in-memory map.
#[derive(Default)]
pub struct Store {
    m: HashMap<String, String>,
}

impl Store {
    /// Stores v under k.
    pub fn put(&mut self, k: &str, v: &str) {
        self.m.insert(k.to_string(), v.to_string());
    }
    /// Returns the value under k.
    pub fn get(&self, k: &str) -> Option<&String> {
        self.m.get(k)
    }
}
