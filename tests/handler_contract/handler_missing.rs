//! A tag's trait implemented without one of its operations' handlers.

use wpds::operations::TimeLogApi;

struct Handlers;

impl TimeLogApi for Handlers {}

fn main() {}
