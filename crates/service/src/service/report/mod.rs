//! Reports: a suite's charts as files people can keep, mail and open without
//! Attractor — `attractor report SUITE --out DIR`, and the app's Export.
//!
//! A report is the loss curve, the per-task loss and the artifact timeline,
//! each drawn with plotters to SVG and PNG, plus an `index.html` that shows
//! them above the epoch table. [`render`] makes the files in memory from the
//! suite's [`SuiteEpochs`] (the view the Charts screen draws, so both show
//! the same points); [`Report::write_to`] puts them in a folder (the CLI, the
//! desktop app) and [`Report::zip`] packs them for a download (the browser).
//!
//! Text is laid out and drawn with a font compiled into the binary
//! (`fonts/DejaVuSans.ttf`), so a report looks the same on every machine and
//! needs no system font library.

mod charts;
mod html;
pub mod shape;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use charts::{Chart, Epochs, LossCurve, TaskSpread, Timeline};
use plotters::style::FontStyle;

use crate::service::types::SuiteEpochs;

pub use html::escape;

/// The page and the charts, in the order they are written (the page last, so
/// a folder with an `index.html` holds a whole report).
pub const FILES: [&str; 7] = [
    "loss-curve.svg",
    "loss-curve.png",
    "task-loss.svg",
    "task-loss.png",
    "artifact-timeline.svg",
    "artifact-timeline.png",
    "index.html",
];

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(
        "suite `{0}` has no finished epoch yet, so there is nothing to chart\n  hint: run it first, e.g. `attractor run SUITE.yaml --epochs 3`, or wait for its first epoch to finish"
    )]
    NoEpochs(String),
    #[error(
        "cannot write the report into {path}: {source}\n  hint: choose a folder you can write to (it is created when missing)"
    )]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot draw the {chart} chart: {message}")]
    Draw { chart: &'static str, message: String },
    #[error("cannot pack the report into a zip archive: {0}")]
    Zip(String),
}

/// One file of a report.
#[derive(Debug, Clone)]
pub struct ReportFile {
    pub name: &'static str,
    pub bytes: Vec<u8>,
}

/// A rendered report, in memory.
#[derive(Debug, Clone)]
pub struct Report {
    pub suite: String,
    pub files: Vec<ReportFile>,
}

/// The bundled font; its licence is `fonts/LICENSE`.
static FONT: &[u8] = include_bytes!("fonts/DejaVuSans.ttf");

/// Registers the bundled font with plotters once per process.
fn ensure_font() -> Result<(), ReportError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok =
        *REGISTERED.get_or_init(|| plotters::style::register_font(charts::FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(ReportError::Draw { chart: "any", message: "the bundled font could not be read".into() })
    }
}

/// Draws a chart to SVG and PNG.
fn both<C: Chart>(name: &'static str, chart: &C) -> Result<(Vec<u8>, Vec<u8>), ReportError> {
    let draw = |message| ReportError::Draw { chart: name, message };
    let svg = charts::svg(chart).map_err(draw)?;
    let png = charts::png(chart).map_err(|m| ReportError::Draw { chart: name, message: m })?;
    Ok((svg.into_bytes(), png))
}

/// Renders the report of a suite's epochs. `generated_at` is printed on the
/// page. A suite without a finished epoch has nothing to chart.
pub fn render(view: &SuiteEpochs, generated_at: &str) -> Result<Report, ReportError> {
    ensure_font()?;
    let suite = &view.suite.name;
    let points = shape::loss_points(&view.epochs);
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Err(ReportError::NoEpochs(suite.clone()));
    };
    let epochs = Epochs { first: first.epoch, last: last.epoch, count: points.len() };
    let spread = shape::spread_points(view);
    let (rows, marks) = shape::timeline(&view.epochs, &view.artifacts);

    let loss = LossCurve { title: format!("Loss curve · {suite}"), epochs, points: &points };
    let tasks = TaskSpread { title: format!("Per-task loss · {suite}"), epochs, points: &spread };
    let timeline = Timeline { title: format!("Artifact changes · {suite}"), epochs, rows: &rows, marks: &marks };

    // The three charts are independent: draw them side by side.
    let (l, t, a) = std::thread::scope(|s| {
        let l = s.spawn(|| both("loss curve", &loss));
        let t = s.spawn(|| both("per-task loss", &tasks));
        let a = both("artifact timeline", &timeline);
        let join = |h: std::thread::ScopedJoinHandle<'_, _>| {
            h.join().unwrap_or_else(|_| {
                Err(ReportError::Draw { chart: "any", message: "the drawing thread panicked".into() })
            })
        };
        (join(l), join(t), a)
    });
    let ((loss_svg, loss_png), (tasks_svg, tasks_png), (timeline_svg, timeline_png)) = (l?, t?, a?);

    let figures = [
        html::Figure {
            stem: "loss-curve",
            heading: "Loss curve",
            size: loss.size(),
            caption: "Mean training loss per epoch with its dashed 3-epoch average; dot colour: green = an artifact was updated, red = rolled back, grey = no change. The orange dotted line is the held-out mean, which the optimizer never sees.",
        },
        html::Figure {
            stem: "task-loss",
            heading: "Per-task loss",
            size: tasks.size(),
            caption: "Per epoch, the training tasks' losses: the light bar spans min to max, the darker box the middle half, the dot is the median. Orange diamonds are held-out tasks.",
        },
        html::Figure {
            stem: "artifact-timeline",
            heading: "Artifact changes",
            size: timeline.size(),
            caption: "A row per artifact that moved, a column per epoch: a green circle is an update, a red × a rollback. The epoch table below names the versions.",
        },
    ];
    let page = html::page(view, &points, &figures, generated_at);

    let bytes = [loss_svg, loss_png, tasks_svg, tasks_png, timeline_svg, timeline_png, page.into_bytes()];
    Ok(Report {
        suite: suite.clone(),
        files: FILES.iter().zip(bytes).map(|(name, bytes)| ReportFile { name, bytes }).collect(),
    })
}

impl Report {
    /// A name for the report's folder or archive, safe on every file system:
    /// the suite's name with anything but letters, digits, `-`, `_` and `.`
    /// replaced by `-`.
    pub fn folder_name(&self) -> String {
        let slug: String = self
            .suite
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' })
            .collect();
        let slug = slug.trim_matches(|c| c == '-' || c == '.');
        format!("{}-report", if slug.is_empty() { "suite" } else { slug })
    }

    pub fn file(&self, name: &str) -> Option<&ReportFile> {
        self.files.iter().find(|f| f.name == name)
    }

    /// Writes the files into `dir` (created when missing; files of an older
    /// report there are replaced) and returns their paths.
    pub fn write_to(&self, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
        let failed = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ReportError::Write { path, source }
        };
        if dir.exists() && !dir.is_dir() {
            return Err(ReportError::Write {
                path: dir.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::AlreadyExists, "it is a file, not a folder"),
            });
        }
        std::fs::create_dir_all(dir).map_err(failed(dir))?;
        let mut written = Vec::with_capacity(self.files.len());
        for f in &self.files {
            // Written beside, then renamed: a reader never sees half a file.
            let path = dir.join(f.name);
            let part = dir.join(format!(".{}.part", f.name));
            std::fs::write(&part, &f.bytes).map_err(failed(&part))?;
            std::fs::rename(&part, &path).map_err(failed(&path))?;
            written.push(path);
        }
        Ok(written)
    }

    /// The files in a zip archive, inside one folder ([`Report::folder_name`]).
    /// Text is deflated; PNGs are stored as they are (already compressed).
    pub fn zip(&self) -> Result<Vec<u8>, ReportError> {
        use zip::CompressionMethod;
        use zip::write::SimpleFileOptions;
        let zip_err = |e: zip::result::ZipError| ReportError::Zip(e.to_string());
        let folder = self.folder_name();
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for f in &self.files {
            let method = if f.name.ends_with(".png") { CompressionMethod::Stored } else { CompressionMethod::Deflated };
            let options = SimpleFileOptions::default().compression_method(method).unix_permissions(0o644);
            w.start_file(format!("{folder}/{}", f.name), options).map_err(zip_err)?;
            w.write_all(&f.bytes).map_err(|e| ReportError::Zip(e.to_string()))?;
        }
        Ok(w.finish().map_err(zip_err)?.into_inner())
    }
}
