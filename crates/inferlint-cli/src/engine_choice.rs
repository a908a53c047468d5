//! Which engine the inputs are read as: the one the user named (`--engine` or
//! `INFERLINT_ENGINE`), checked against what each input says of itself.

use inferlint_core::Engine;

use crate::exit::CliError;
use crate::output::eprint_line;

/// Where the named engine came from; it shapes the refusal message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedBy {
    Flag,
    Environment,
}

/// The engine for this command, and what each input turned out to be.
#[derive(Debug)]
pub struct EngineChoice {
    pub named: Option<(Engine, NamedBy)>,
    identified: Option<(Engine, String)>,
    unidentified: Vec<String>,
}

impl EngineChoice {
    /// Reads `--engine`, else a non-blank `INFERLINT_ENGINE`.
    pub fn from_args(flag: Option<&str>) -> Result<EngineChoice, CliError> {
        let named = match flag {
            Some(text) => Some((
                Engine::parse(text).ok_or_else(|| {
                    CliError::usage(format!(
                        "unknown engine '{}' (known: vllm, sglang, trtllm)",
                        text.trim()
                    ))
                })?,
                NamedBy::Flag,
            )),
            None => match std::env::var("INFERLINT_ENGINE") {
                Ok(text) if !text.trim().is_empty() => Some((
                    Engine::parse(&text).ok_or_else(|| {
                        CliError::usage(format!(
                            "INFERLINT_ENGINE='{}' is not an engine (known: vllm, sglang, trtllm)",
                            text.trim()
                        ))
                    })?,
                    NamedBy::Environment,
                )),
                _ => None,
            },
        };
        Ok(EngineChoice {
            named,
            identified: None,
            unidentified: Vec::new(),
        })
    }

    /// Records what one input says it came from. An input from another engine than the
    /// named one is refused; so is one that disagrees with an earlier input.
    pub fn input(&mut self, what: &str, engine: Option<Engine>) -> Result<(), CliError> {
        let Some(engine) = engine else {
            self.unidentified.push(what.to_owned());
            return Ok(());
        };
        if let Some((named, by)) = self.named {
            if named != engine {
                let prefix = match by {
                    NamedBy::Flag => format!("--engine {}", named.key()),
                    NamedBy::Environment => format!("INFERLINT_ENGINE={}", named.key()),
                };
                return Err(CliError::usage(format!(
                    "{prefix}, but {what} came from {}. Check the server address or the file, or name the engine it came from.",
                    engine.name()
                )));
            }
        }
        if let Some((first, first_what)) = &self.identified {
            if *first != engine {
                return Err(CliError::usage(format!(
                    "{first_what} came from {}, but {what} came from {}; a run's files must come from one server (name the engine with --engine to say which)",
                    first.name(),
                    engine.name()
                )));
            }
        } else {
            self.identified = Some((engine, what.to_owned()));
        }
        Ok(())
    }

    /// The engine to read every input as. With nothing named and nothing identified,
    /// vLLM, with a note on stderr naming the inputs that did not say.
    pub fn resolve(&self) -> Engine {
        if let Some((engine, _)) = self.named {
            return engine;
        }
        if let Some((engine, _)) = &self.identified {
            return *engine;
        }
        for what in &self.unidentified {
            eprint_line!(
                "note: {what} does not say which engine it came from; read as vLLM's (--engine or INFERLINT_ENGINE names it)"
            );
        }
        Engine::Vllm
    }
}
