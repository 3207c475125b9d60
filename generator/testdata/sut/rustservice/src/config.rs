use serde::Deserialize;

#[derive(Deserialize)]
pub struct Config {
    pub listen: String,
    pub data_dir: String,
    pub peers: Vec<String>,
}

pub fn load(path: &str) -> Result<Config, Box<dyn std::error::Error>> {
    Ok(toml::from_str(&std::fs::read_to_string(path)?)?)
}
