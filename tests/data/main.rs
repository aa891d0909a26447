//! Tables and their sources: CSV, Parquet and PostgreSQL read alike, histograms, sums,
//! privacy units, cubes, and the attacks on each.

#[path = "../common/mod.rs"]
mod common;

mod cube_change;
mod data_count;
mod data_import;
mod data_load;
mod data_read_once;
mod foregone;
mod histogram;
mod histogram_attack;
mod parquet_attack;
mod postgres_attack;
mod privacy_unit;
mod privacy_unit_attack;
mod properties;
mod sources;
mod sources_attack;
mod sums;
mod sums_attack;
