//! The report's `index.html`: the three charts and the epoch table, in one
//! self-contained page that needs no server and runs no script.
//!
//! Everything that comes from a suite file, a model or the database (suite,
//! task and artifact names, rationales) goes through [`escape`]; the page
//! also forbids every script with its own content security policy, so a
//! name that slipped through could not run anything.

use std::fmt::Write as _;

use super::shape::{LossPoint, rollback_reason, transition_label};
use crate::service::types::{ArtifactEvent, RunState, SuiteEpochs};

/// Text made safe for HTML content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn loss(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map_or_else(|| "–".to_string(), |v| format!("{v:.4}"))
}

/// One chart on the page: its file stem, heading, pixel size and caption.
pub struct Figure<'a> {
    pub stem: &'a str,
    pub heading: &'a str,
    pub size: (u32, u32),
    pub caption: &'a str,
}

const STYLE: &str = "
:root { color-scheme: light; --muted: #606670; --line: #e6e8eb; --holdout: #b8650a; }
* { box-sizing: border-box; }
body { margin: 0 auto; padding: 24px 32px 48px; max-width: 1400px; font: 15px/1.45 system-ui, sans-serif; color: #22252b; background: #fff; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; }
.meta, figcaption, .muted { color: var(--muted); }
.stats { display: flex; flex-wrap: wrap; gap: 8px 28px; margin: 14px 0 0; padding: 0; }
.stats div { display: flex; flex-direction: column; }
.stats dt { font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.stats dd { margin: 0; font-size: 19px; font-weight: 600; font-variant-numeric: tabular-nums; }
figure { margin: 0; }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 6px; }
.scroll img { display: block; max-width: none; }
figcaption { font-size: 13px; margin-top: 6px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 5px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); position: sticky; top: 0; background: #fff; }
td.num, th.num { text-align: right; }
.holdout { color: var(--holdout); }
.ev { display: inline-block; margin-right: 10px; white-space: nowrap; }
.ev.update::before { content: '●'; color: #2e9d4f; margin-right: 4px; }
.ev.rollback::before { content: '✖'; color: #d64545; margin-right: 4px; }
.ev.rollback { color: #b03030; }
tr.open td { font-style: italic; color: var(--muted); }
ul.tasks { columns: 3 220px; padding-left: 18px; margin: 0; }
";

/// The whole page.
pub fn page(view: &SuiteEpochs, points: &[LossPoint], figures: &[Figure<'_>], generated_at: &str) -> String {
    let suite = escape(&view.suite.name);
    let held = view.tasks.iter().filter(|t| t.holdout).count();
    let mut h = String::with_capacity(64 * 1024 + view.epochs.len() * 400);
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src 'self'; style-src 'unsafe-inline'\">\n\
         <title>Attractor report · {suite}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<header>\n\
         <h1>Attractor report · <span data-field=\"suite\">{suite}</span></h1>\n\
         <p class=\"meta\">{} of {}, {held} held out · generated {}</p>\n",
        crate::counted(points.len(), "finished epoch"),
        crate::counted(view.tasks.len(), "task"),
        escape(generated_at),
    );
    stats(&mut h, view, points);
    h.push_str("</header>\n");

    for f in figures {
        let _ = write!(
            h,
            "<section>\n<h2>{heading}</h2>\n<figure>\n<div class=\"scroll\"><img src=\"{stem}.svg\" width=\"{w}\" height=\"{ht}\" alt=\"{heading} of {suite}\"></div>\n\
             <figcaption>{caption} · <a href=\"{stem}.svg\">SVG</a> · <a href=\"{stem}.png\">PNG</a></figcaption>\n</figure>\n</section>\n",
            heading = escape(f.heading),
            stem = escape(f.stem),
            w = f.size.0,
            ht = f.size.1,
            caption = escape(f.caption),
        );
    }

    epoch_table(&mut h, view);

    h.push_str("<section>\n<h2>Tasks</h2>\n<ul class=\"tasks\">\n");
    for t in &view.tasks {
        let _ = writeln!(
            h,
            "<li>{}{}</li>",
            escape(&t.name),
            if t.holdout { " <span class=\"holdout\">(held out)</span>" } else { "" }
        );
    }
    h.push_str("</ul>\n</section>\n</body>\n</html>\n");
    h
}

fn stats(h: &mut String, view: &SuiteEpochs, points: &[LossPoint]) {
    let latest = points.last();
    let best = points
        .iter()
        .filter_map(|p| p.loss.filter(|l| l.is_finite()).map(|l| (l, p.epoch)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let (updates, rollbacks) = view.epochs.iter().flat_map(|e| &e.events).fold((0, 0), |(u, r), e| match e {
        ArtifactEvent::Update { .. } => (u + 1, r),
        ArtifactEvent::Rollback { .. } => (u, r + 1),
    });
    h.push_str("<dl class=\"stats\">\n");
    let mut stat = |label: &str, value: String, class: &str| {
        let _ = writeln!(h, "<div><dt{class}>{label}</dt><dd data-stat=\"{label}\">{value}</dd></div>");
    };
    stat("epochs", points.len().to_string(), "");
    stat("latest mean loss", loss(latest.and_then(|p| p.loss)), "");
    stat("best mean loss", best.map_or_else(|| "–".into(), |(l, e)| format!("{l:.4} <small>(epoch {e})</small>")), "");
    if points.iter().any(|p| p.holdout.is_some()) {
        stat("latest held-out mean", loss(latest.and_then(|p| p.holdout)), " class=\"holdout\"");
    }
    stat("updates", updates.to_string(), "");
    stat("rollbacks", rollbacks.to_string(), "");
    h.push_str("</dl>\n");
}

fn epoch_table(h: &mut String, view: &SuiteEpochs) {
    h.push_str(
        "<section>\n<h2>Epochs</h2>\n<table data-table=\"epochs\">\n<thead><tr><th class=\"num\">Epoch</th>\
         <th class=\"num\">Mean training loss</th><th class=\"num holdout\">Held-out loss</th>\
         <th class=\"num\">Runs</th><th>Artifact changes</th></tr></thead>\n<tbody>\n",
    );
    for e in &view.epochs {
        let open = e.completed_at.is_none();
        // The runs the epoch counts (one per task; a run cut short and run
        // again counts once), and how many of them failed.
        let failed = e.tasks.iter().filter(|t| matches!(t.status, RunState::Failed | RunState::Aborted)).count();
        let mut runs = e.tasks.len().to_string();
        if failed > 0 {
            let _ = write!(runs, " · {failed} failed");
        }
        let changes = if open {
            "running or interrupted (resumes on the next launch)".to_string()
        } else if e.events.is_empty() {
            "<span class=\"muted\">none</span>".to_string()
        } else {
            e.events
                .iter()
                .map(|ev| {
                    let (class, why) = match ev {
                        ArtifactEvent::Update { rationale, .. } => ("update", rationale.clone()),
                        ArtifactEvent::Rollback { mean_loss_prev, mean_loss_current, .. } => {
                            let why = rollback_reason(ev).unwrap_or_else(|| {
                                format!("mean loss {} → {}", loss(*mean_loss_prev), loss(*mean_loss_current))
                            });
                            ("rollback", why)
                        }
                    };
                    format!(
                        "<span class=\"ev {class}\" title=\"{}\">{}</span>",
                        escape(&why),
                        escape(&transition_label(ev))
                    )
                })
                .collect::<Vec<_>>()
                .join("")
        };
        let _ = writeln!(
            h,
            "<tr data-epoch=\"{num}\"{cls}><td class=\"num\">{num}</td><td class=\"num\">{mean}</td>\
             <td class=\"num holdout\">{held}</td><td class=\"num\">{runs}</td><td>{changes}</td></tr>",
            num = e.epoch_num,
            cls = if open { " class=\"open\"" } else { "" },
            mean = loss(e.mean_loss),
            held = loss(e.holdout_mean_loss),
        );
    }
    h.push_str("</tbody>\n</table>\n</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_are_escaped_in_text_and_attributes() {
        assert_eq!(
            escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(escape("plain → text"), "plain → text");
    }
}
