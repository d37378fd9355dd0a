//! A handler taking another request body than its operation's (as after the document
//! changed the operation's request schema).

use wpds::error::ApiError;
use wpds::operations::{RequestContext, SetOwnTimeLogCellResponse, TimeLogApi};
use wpds_contract::types::{RetireCompanyRequest, SetOwnTimeLogCellPath};

struct Handlers;

impl TimeLogApi for Handlers {
    async fn set_own_time_log_cell(
        &self,
        _ctx: RequestContext,
        _path: SetOwnTimeLogCellPath,
        _body: RetireCompanyRequest,
    ) -> Result<SetOwnTimeLogCellResponse, ApiError> {
        unimplemented!()
    }
}

fn main() {}
