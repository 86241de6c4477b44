//! Log lines on stderr. By default they read like the rest of the output —
//! "warning: the model server is slow" — rather than "WARN attractor::llm:
//! …", the level in Rust's words and a module path a person has no use
//! for. RUST_LOG gives the full form, with times and targets, for debugging.

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Sets up logging for the process: warnings, and the model client's
/// "waiting on the model" progress, by default; colours only on a terminal,
/// so a redirected log holds no escape codes.
pub fn init() {
    let debugging = std::env::var_os("RUST_LOG").is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,attractor::llm=info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(debugging);
    if debugging {
        builder.init();
    } else {
        builder.event_format(Plain).init();
    }
}

/// "warning: …", "error: …", "note: …", then the message and its fields.
pub struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let label = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            _ => "note",
        };
        write!(writer, "{label}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::Plain;

    /// A writer into a shared buffer, for the subscriber under test.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_warning_reads_as_the_rest_of_the_output_without_rusts_level_or_module() {
        let buffer = Buffer::default();
        let sink = buffer.clone();
        let subscriber =
            tracing_subscriber::fmt().with_ansi(false).event_format(Plain).with_writer(move || sink.clone()).finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(request = 7, "could not complete the request");
            tracing::info!("waiting on the model");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text, "warning: could not complete the request request=7\nnote: waiting on the model\n");
    }
}
