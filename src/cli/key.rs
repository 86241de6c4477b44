//! `attractor key`: the LLM API key in the operating system's keychain.
//!
//! The key is read from standard input, never from the command line, where
//! other users could see it in the process list; it is never printed back.

use std::io::{IsTerminal, Read};

use clap::Subcommand;

use super::Failure;
use crate::secrets::{KeySource, Keychain, key_in_environment};

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Store the key read from standard input (one line) in the keychain.
    Set,
    /// Say where the key a run would use comes from (never the key itself).
    Status,
    /// Remove the key from the keychain.
    Delete,
}

pub fn run(command: &KeyCommand) -> Result<u8, Failure> {
    let env = |n: &str| std::env::var(n).ok();
    let keychain = Keychain::api_key();
    match command {
        KeyCommand::Set => {
            if std::io::stdin().is_terminal() {
                eprintln!("paste the API key, then press Enter and Ctrl-D:");
            }
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Failure::input(format!("cannot read the key from standard input: {e}")))?;
            let key = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
            if key.is_empty() {
                return Err(Failure::input(
                    "no key on standard input\n  hint: `printf '%s' \"$KEY\" | attractor key set`",
                ));
            }
            keychain.store(key).map_err(|e| Failure::runtime(e.to_string()))?;
            println!("stored the API key in the keychain (service `attractor`, account `llm-api-key`)");
            if let Some(var) = key_in_environment(&env) {
                println!("note: {var} is set and wins over the keychain in this shell");
            }
            Ok(0)
        }
        KeyCommand::Status => {
            let source = match key_in_environment(&env) {
                Some(var) => Some(KeySource::Environment(var)),
                None => match keychain.read() {
                    Ok(Some(_)) => Some(KeySource::Keychain),
                    Ok(None) => None,
                    Err(e) => {
                        println!("no API key in the environment; {e}");
                        return Ok(1);
                    }
                },
            };
            match &source {
                Some(s) => println!("API key: from {}", s.describe()),
                None => println!(
                    "no API key (local servers such as Ollama need none)\n  hint: `attractor key set` stores one in \
                     the keychain, or set ATTRACTOR_LLM_API_KEY"
                ),
            }
            Ok(if source.is_some() { 0 } else { 1 })
        }
        KeyCommand::Delete => {
            let removed = keychain.delete().map_err(|e| Failure::runtime(e.to_string()))?;
            println!(
                "{}",
                if removed { "removed the API key from the keychain" } else { "the keychain held no API key" }
            );
            Ok(0)
        }
    }
}
