//! A handler that no longer sets a response header its operation declares
//! (`createCrossProjectReportExport`'s `Idempotent-Replayed`).

use wpds::operations::CreateCrossProjectReportExportResponse;
use wpds_contract::types::ExportRecord;

fn created(record: ExportRecord) -> CreateCrossProjectReportExportResponse {
    CreateCrossProjectReportExportResponse::Created { body: record }
}

fn main() {
    let _ = created;
}
