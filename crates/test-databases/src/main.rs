//! `wpds-test-databases left URL`: CI's check after each pass on PostgreSQL that the tests
//! left none of their databases on the server of URL (a direct connection, never a pooler):
//! none whose owner's session is gone ([`wpds_test_databases::left`]; a pass running beside
//! keeps its own). Prints the ones left and exits 1 if there are any; exits 2 if it cannot
//! look.

use diesel::{Connection, PgConnection};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [command, url] = args.as_slice() else {
        eprintln!("usage: wpds-test-databases left URL");
        return ExitCode::from(2);
    };
    if command != "left" {
        eprintln!("usage: wpds-test-databases left URL (not {command:?})");
        return ExitCode::from(2);
    }
    let left = PgConnection::establish(url)
        .map_err(|e| e.to_string())
        .and_then(|mut session| wpds_test_databases::left(&mut session).map_err(|e| e.to_string()));
    match left {
        Err(why) => {
            eprintln!("wpds-test-databases: cannot list the databases: {why}");
            ExitCode::from(2)
        }
        Ok(left) if left.is_empty() => {
            println!("wpds-test-databases: no test database left ({}…)", wpds_test_databases::PREFIX);
            ExitCode::SUCCESS
        }
        Ok(left) => {
            eprintln!("wpds-test-databases: test databases left behind: {}", left.join(" "));
            ExitCode::FAILURE
        }
    }
}
