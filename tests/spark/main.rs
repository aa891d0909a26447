//! Spark tables through Spark Connect, built with `--features spark` and run against a real
//! Spark Connect server (`bash .ci/spark.sh`): the statements, the served dataset, the attacks,
//! and the differential test of every source (`tests/data/sources.rs`) with Spark among them.

#[path = "../common/mod.rs"]
mod common;

mod attack;
#[path = "../data/sources.rs"]
mod sources;
mod tables;
