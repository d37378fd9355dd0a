//! A handler answering another body than its operation's 200 declares (as after the
//! document changed the response schema).

use wpds::error::ApiError;
use wpds::operations::{RequestContext, SetOwnTimeLogCellResponse, TimeLogApi};
use wpds_contract::types::{SetOwnTimeLogCellPath, SetTimeLogCellRequest, TimeLogEntry, TimeLogEntryPhase};

struct Handlers;

impl TimeLogApi for Handlers {
    async fn set_own_time_log_cell(
        &self,
        _ctx: RequestContext,
        _path: SetOwnTimeLogCellPath,
        body: SetTimeLogCellRequest,
    ) -> Result<SetOwnTimeLogCellResponse, ApiError> {
        let entry = TimeLogEntry {
            id: "1".to_owned(),
            project_id: body.project_id,
            phase: TimeLogEntryPhase::General,
            date: body.date,
            hours: body.hours,
            note: String::new(),
            billable: true,
            version: 2,
        };
        Ok(SetOwnTimeLogCellResponse::Ok(entry))
    }
}

fn main() {}
