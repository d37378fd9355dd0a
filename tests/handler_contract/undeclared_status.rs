//! A handler answering a status its operation does not declare (`setOwnTimeLogCell`
//! declares 200, not 201).

use wpds::operations::SetOwnTimeLogCellResponse;
use wpds_contract::types::TimeLogCellResult;

fn created(result: TimeLogCellResult) -> SetOwnTimeLogCellResponse {
    SetOwnTimeLogCellResponse::Created(result)
}

fn main() {
    let _ = created;
}
