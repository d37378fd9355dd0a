//! A handler whose operation the document does not have (here: renamed).

use wpds::error::ApiError;
use wpds::operations::{RequestContext, SetOwnTimeLogCellResponse, TimeLogApi};
use wpds_contract::types::{SetOwnTimeLogCellPath, SetTimeLogCellRequest};

struct Handlers;

impl TimeLogApi for Handlers {
    async fn set_own_time_log_cell_v2(
        &self,
        _ctx: RequestContext,
        _path: SetOwnTimeLogCellPath,
        _body: SetTimeLogCellRequest,
    ) -> Result<SetOwnTimeLogCellResponse, ApiError> {
        unimplemented!()
    }
}

fn main() {}
