//! A suite's report: built from the store, written into a folder (the desktop's Export) or
//! packed as a zip (the browser's download).

use super::*;

impl Service {
    /// A suite's report (`crate::service::report`), rendered in memory from the same
    /// view the Charts screen draws. Drawing is CPU work: it runs on the
    /// blocking pool, not on the threads that serve requests.
    pub async fn report(&self, key: &str) -> Result<crate::service::report::Report> {
        // The counted losses are all a report draws: the run lists (most of
        // the payload at 500 epochs × 50 tasks) stay out, as for the charts.
        let view = self.suite_epochs_in(key, false, crate::store::EpochWindow::All).await?;
        let generated_at = crate::now_rfc3339();
        tokio::task::spawn_blocking(move || crate::service::report::render(&view, &generated_at))
            .await
            .map_err(|e| ServiceError::Internal(format!("drawing the report stopped: {e}")))?
            .map_err(report_error)
    }

    /// Writes a suite's report into a folder (created when missing; `~/` is
    /// the home folder). The CLI's `attractor report` and the desktop app's
    /// Export.
    pub async fn write_report(&self, key: &str, dir: &str) -> Result<ReportWritten> {
        let dir = resolve_path(dir);
        if dir.as_os_str().is_empty() {
            return Err(ServiceError::BadInput("give the folder to write the report into".into()));
        }
        let report = self.report(key).await?;
        let target = dir.clone();
        let written = tokio::task::spawn_blocking(move || report.write_to(&target).map(|files| (report.suite, files)))
            .await
            .map_err(|e| ServiceError::Internal(format!("writing the report stopped: {e}")))?;
        let (suite, files) = written.map_err(report_error)?;
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        Ok(ReportWritten {
            suite,
            index: dir.join("index.html").display().to_string(),
            dir: dir.display().to_string(),
            files: files.iter().filter_map(|f| f.file_name()).map(|n| n.to_string_lossy().into_owned()).collect(),
        })
    }

    /// A suite's report as a zip archive, with the file name to offer for it
    /// (the browser's Export downloads it).
    pub async fn report_zip(&self, key: &str) -> Result<ReportArchive> {
        let report = self.report(key).await?;
        tokio::task::spawn_blocking(move || {
            let bytes = report.zip().map_err(report_error)?;
            Ok(ReportArchive { file_name: format!("{}.zip", report.folder_name()), bytes })
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("packing the report stopped: {e}")))?
    }

    // ----- runs ---------------------------------------------------------------
}

/// A report packed for a download.
pub struct ReportArchive {
    /// `SUITE-report.zip`, with only letters, digits, `-`, `_` and `.`.
    pub file_name: String,
    pub bytes: Vec<u8>,
}

pub(super) fn report_error(e: crate::service::report::ReportError) -> ServiceError {
    use crate::service::report::ReportError;
    match e {
        e @ ReportError::NoEpochs(_) => ServiceError::Conflict(e.to_string()),
        e @ ReportError::Write { .. } => ServiceError::BadInput(e.to_string()),
        e @ (ReportError::Draw { .. } | ReportError::Zip(_)) => ServiceError::Internal(e.to_string()),
    }
}
