//! Shard servers for the tests and benchmarks of a table sharded over PostgreSQL servers.
#![allow(dead_code)]

/// Ports of the two shard servers.
pub const SHARD_PORTS: [u16; 2] = [25441, 25442];

/// Starts (or finds running) a PostgreSQL server of its own on loopback port `port`, with
/// `.ci/postgres.sh` (run from the project's root), and returns its connection string.
pub fn shard_server(port: u16) -> String {
    let out = std::process::Command::new("bash")
        .arg(".ci/postgres.sh")
        .env("DPQ_PG_PORT", port.to_string())
        .env("DPQ_PG_DIR", format!("/tmp/dpq-postgres-shard-{port}"))
        .output()
        .expect("bash runs .ci/postgres.sh");
    assert!(
        out.status.success(),
        "a shard server starts: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
