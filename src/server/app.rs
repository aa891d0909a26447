//! The HTTP server: one session per analyst over the datasets of the curator's policy, each
//! request run in it, every statement written to the audit log and handed to the curator's
//! log ([`super::activity`]).
//!
//! Every dataset is read once, at start, and shared by the analysts' sessions. A request runs
//! on a blocking thread while the server goes on serving others; one analyst's requests run
//! one at a time in their own session, and the datasets' ledgers (locked per statement) keep
//! analysts racing for the last of a budget from both getting it.

use super::activity::{statement_kind, Activity, Log, Outcome, Summary, Tally};
use super::api::{Account, AccountDataset, Amounts, StatementResult};
use super::api::{Catalog, DatasetInfo, ErrorBody, Problem, RunRequest, RunResponse};
use super::policy::{DataSource, Dataset, Limits, Policy};
use crate::ast::{Ident, Statement, StatementKind};
use crate::data::{load_csv, LoadOptions, Source};
use crate::error::Error;
use crate::eval::{Randomness, ServedTable, Session};
use crate::output::{render_json, render_table, Budget, Output, TableInfo};
use crate::privacy::Store;
use crate::syntax;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Where and how to serve.
#[derive(Debug, Clone)]
pub struct Options {
    /// The address to listen on (port 0: any free port).
    pub listen: SocketAddr,
    /// Where the ledgers and the audit log live.
    pub state_dir: PathBuf,
}

/// What the server says once it listens.
#[derive(Debug, Clone)]
pub struct Started {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// What the start found worth telling the curator (a dataset's file changed under its
    /// ledger, a policy budget below what is spent).
    pub notes: Vec<String>,
}

/// An analyst's side of the server.
struct Analyst {
    name: String,
    session: Mutex<Session>,
    catalog: Catalog,
    /// Their requests under way: a request beyond the limit is refused, not queued, so that
    /// one analyst's flood never holds the threads others need.
    in_flight: Arc<tokio::sync::Semaphore>,
}

/// The analysts, by the hash of their token.
type Analysts = HashMap<[u8; 32], Arc<Analyst>>;

/// What every request sees.
struct App {
    analysts: Analysts,
    limits: Limits,
    audit: Mutex<File>,
    /// Each dataset's deadline, by the name analysts `USE` (zero: not padded).
    deadlines: Deadlines,
    /// The curator's session over every dataset: the budgets of all analysts together.
    curator: Mutex<Session>,
    /// The datasets whose budget, shared by all analysts, the analysts may see.
    shown: HashSet<String>,
    /// Where each statement's record goes, if anywhere.
    log: Option<Log>,
    /// The run's statements and spending, per analyst and dataset.
    tally: Mutex<Tally>,
}

/// The least time a statement that read a dataset takes to answer, by the dataset's name.
type Deadlines = HashMap<String, Duration>;

/// Serves `policy` until SIGTERM or SIGINT; `started` is told where, once listening, and
/// `log`, if given, of every statement as it finishes. Returns the run's summary.
pub fn serve(
    policy: &Policy,
    options: Options,
    started: impl FnOnce(&Started),
    log: Option<Log>,
) -> Result<Summary, String> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&options.state_dir)
        .map_err(|e| {
            format!(
                "cannot make the state directory {}: {e}",
                options.state_dir.display()
            )
        })?;
    // Held while serving: a demo's reset waits for no server to be running.
    let serving = super::reset::open_lock(&options.state_dir)?;
    serving.try_lock_shared().map_err(|_| {
        format!(
            "the state directory {} is being reset (dpq serve --reset-demo): start again once it is done",
            options.state_dir.display()
        )
    })?;
    let prepared = prepare(policy, &options.state_dir)?;
    let audit_path = options.state_dir.join("audit.log");
    let audit = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&audit_path)
        .map_err(|e| format!("cannot open the audit log {}: {e}", audit_path.display()))?;
    let app = Arc::new(App {
        analysts: prepared.analysts,
        limits: policy.limits,
        audit: Mutex::new(audit),
        deadlines: prepared.deadlines,
        curator: Mutex::new(prepared.curator),
        shown: policy
            .datasets
            .iter()
            .filter(|d| d.rules.show_dataset_budget)
            .map(|d| d.name.clone())
            .collect(),
        log,
        tally: Mutex::new(prepared.tally),
    });
    let notes = prepared.notes;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the server's runtime: {e}"))?;
    let served = Arc::clone(&app);
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(options.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
        started(&Started { addr, notes });
        accept(listener, served).await;
        Ok::<(), String>(())
    })?;
    // Every request's statements have finished once the runtime is gone.
    drop(runtime);
    let summary = app.summary(policy);
    drop(serving);
    Ok(summary)
}

/// How long the requests under way may take to finish once SIGTERM came.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Accepts connections until SIGTERM or SIGINT, at most `max_connections` at once, each of
/// which must send its request (headers, then body) within `body_millis` and is closed once
/// idle that long; then lets the requests under way finish, for at most [`SHUTDOWN_GRACE`].
async fn accept(listener: tokio::net::TcpListener, app: Arc<App>) {
    let limits = app.limits;
    let router = router(app);
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let stop = shutdown();
    tokio::pin!(stop);
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot,
            () = &mut stop => break,
        };
        let Ok(slot) = slot else { break };
        let stream = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let Ok((stream, _)) = stream else {
            // Out of file descriptors, say: wait a little rather than spin.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(Duration::from_millis(limits.body_millis))
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
}

/// The routes, with the limits on bodies.
fn router(app: Arc<App>) -> Router {
    let limits = app.limits;
    Router::new()
        .route("/v1/run", post(run))
        .route("/v1/catalog", get(catalog))
        .route("/v1/account", get(account))
        .route(
            "/v1/health",
            get(|| async { Json(serde_json::json!({ "status": "ok" })) }),
        )
        .layer(DefaultBodyLimit::max(limits.max_request_bytes))
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
            Duration::from_millis(limits.body_millis),
        ))
        // Outermost: a body declared larger than the limit is refused at once, before any
        // of it is waited for.
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| async move {
                let declared = request
                    .headers()
                    .get(axum::http::header::CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u128>().ok());
                match declared {
                    Some(n) if n > limits.max_request_bytes as u128 => too_large(limits),
                    _ => next.run(request).await,
                }
            },
        ))
        .with_state(app)
}

/// Resolves on SIGTERM or SIGINT: requests under way finish, new ones are refused.
async fn shutdown() {
    use tokio::signal::unix::{signal, SignalKind};
    let term = async {
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => {},
        _ = tokio::signal::ctrl_c() => {},
    }
}

/// What a server starts with.
struct Prepared {
    analysts: Analysts,
    deadlines: Deadlines,
    /// What the start found worth telling the curator.
    notes: Vec<String>,
    /// The curator's session over every dataset.
    curator: Session,
    /// What each analyst had spent on each dataset when the server started.
    tally: Tally,
}

/// Reads every dataset once, records its policy in its ledger through a curator's session,
/// and opens each analyst's session over their datasets; with each dataset's deadline.
fn prepare(policy: &Policy, state_dir: &Path) -> Result<Prepared, String> {
    let mut notes = Vec::new();
    let mut deadlines = Deadlines::new();
    // Each dataset's `id` becomes the id whose ledger it keeps; what it serves is recorded.
    let (mut identities, policy) = super::identity::Settled::open(policy, state_dir)?;
    let policy = &policy;
    let mut curator = Session::with_store(Randomness::Os, Store::dir(state_dir));
    let mut data: HashMap<String, (Arc<Source>, [u8; 32])> = HashMap::new();
    for d in &policy.datasets {
        if d.columns.is_none() {
            notes.push(format!(
                "dataset `{}`: its column types are inferred from the data, so the schema analysts see depends on it; declare [dataset.columns] to fix it",
                d.name
            ));
        }
        let (table, content) = read_dataset(d)?;
        for c in contents_of(d, &table, content)? {
            identities.claim(&d.name, &c)?;
        }
        let deadline = response_deadline(d, &table);
        if d.response_ms.is_none() && d.neighbours == crate::privacy::Neighbours::AddRemove {
            notes.push(format!(
                "dataset `{}`: its responses are padded to {} ms, a default that cannot follow its row count (private under add_remove); set `response_ms` to what its answers need",
                d.name,
                deadline.as_millis()
            ));
        }
        notes.extend(unpadded_note(d, &table));
        deadlines.insert(d.name.clone(), deadline);
        let served = served(d, &table, content, None);
        let out = curator
            .attach(served)
            .map_err(|e| format!("dataset `{}`: {}", d.name, Error::from(e)))?;
        if let Output::Loaded(info) = out {
            if info.data_changed {
                notes.push(format!(
                    "dataset `{}`: its file's content differs from what its ledger saw last; its spending still counts",
                    d.name
                ));
            }
            notes.extend(info.warnings);
        }
        let total = curator
            .set_dataset_total(&d.name, d.budget, d.accounting)
            .map_err(|e| format!("dataset `{}`: {}", d.name, Error::from(e)))?;
        if total > d.budget {
            notes.push(format!(
                "dataset `{}`: {} is already spent, above the policy's budget of {}: nothing remains",
                d.name,
                total.normalize(),
                d.budget.normalize()
            ));
        }
        if let Some(cube) = &d.cube {
            curator
                .declare_dataset_cube(&d.name, cube)
                .map_err(|e| format!("dataset `{}`: CUBE {cube}: {e}", d.name))?;
        }
        data.insert(d.name.clone(), (table, content));
    }
    // Every dataset read and claimed: what the state directory remembers of their identities
    // is written now, before any analyst is served (a start that failed above wrote nothing).
    identities.commit()?;
    let mut analysts = HashMap::new();
    let mut tally = Tally::default();
    for a in &policy.analysts {
        let mut session = Session::with_store(Randomness::Os, Store::dir(state_dir));
        session.serve_analyst(policy.limits.quotas);
        let mut datasets = Vec::new();
        for (name, cap) in &a.budgets {
            let d = policy
                .datasets
                .iter()
                .find(|d| d.name == *name)
                .ok_or_else(|| format!("analyst {}: no dataset `{name}`", a.name))?;
            let (table, content) = &data[name];
            let analyst = Some((a.name.clone(), *cap));
            session
                .attach(served(d, table, *content, analyst))
                .map_err(|e| format!("analyst {} on `{name}`: {}", a.name, Error::from(e)))?;
            datasets.push(DatasetInfo {
                name: name.clone(),
                columns: table
                    .schema()
                    .into_iter()
                    .map(|(n, t)| (n, t.to_string()))
                    .collect(),
                statements: d
                    .rules
                    .families
                    .iter()
                    .map(|f| f.name().to_string())
                    .collect(),
            });
        }
        for info in own_budgets(&mut session) {
            tally.start(&a.name, &info.name, info.budget);
        }
        let catalog = Catalog {
            analyst: a.name.clone(),
            datasets,
        };
        let analyst = Analyst {
            name: a.name.clone(),
            session: Mutex::new(session),
            catalog,
            in_flight: Arc::new(tokio::sync::Semaphore::new(
                policy.limits.max_requests_in_flight.max(1),
            )),
        };
        analysts.insert(a.token_hash, Arc::new(analyst));
    }
    Ok(Prepared {
        analysts,
        deadlines,
        notes,
        curator,
        tally,
    })
}

/// The public facts of the session's datasets, each with the analyst's own budget on it (as
/// `SHOW TABLES` gives them: nothing is read or changed).
fn own_budgets(session: &mut Session) -> Vec<TableInfo> {
    let show = Statement {
        kind: StatementKind::ShowTables,
        span: crate::span::Span::default(),
    };
    match session.execute(&show) {
        Ok(r) => match r.output {
            Output::Tables(tables) => tables,
            _ => Vec::new(),
        },
        Err(_) => Vec::new(),
    }
}

/// A dataset's budget over all its analysts, as the curator's session reads its ledger now.
fn whole_budget(curator: &mut Session, dataset: &str) -> Option<Budget> {
    let statement = |kind| Statement {
        kind,
        span: crate::span::Span::default(),
    };
    let table = Ident {
        name: dataset.to_string(),
        span: crate::span::Span::default(),
    };
    curator
        .execute(&statement(StatementKind::Use { table }))
        .ok()?;
    match curator
        .execute(&statement(StatementKind::ShowBudget))
        .ok()?
        .output
    {
        Output::Budget(b) => Some(Budget {
            total: b.total,
            spent: b.spent,
            remaining: b.remaining,
        }),
        _ => None,
    }
}

/// What identifies a served dataset's data in the state directory: its content and, for
/// Parquet files, each file's own bytes too, so that a directory and one of its files, or a
/// set and a subset, are known for the same rows under any id.
pub fn contents_of(
    d: &Dataset,
    source: &Source,
    content: [u8; 32],
) -> Result<Vec<[u8; 32]>, String> {
    let mut out = vec![content];
    if let Source::Parquet(p) = source {
        if p.files() > 1 {
            let hashes = crate::data::parquet_file_hashes(p)
                .map_err(|e| format!("dataset `{}`: cannot load {}: {e}", d.name, d.source))?;
            out.extend(hashes);
        }
    }
    Ok(out)
}

/// The least time before a response that read dataset `d` leaves the server: the policy's
/// `response_ms`, else a default from public facts only, the kind of source and, where it is
/// public (under `replace`), the row count. The default covers a question of a few
/// conditions, a histogram or a sum with room to spare on the machine the benchmarks ran on
/// (`benches/timing.rs`); a statement that takes longer is answered at the next multiple of
/// the deadline.
pub fn response_deadline(d: &Dataset, source: &Source) -> Duration {
    if let Some(ms) = d.response_ms {
        return Duration::from_millis(ms);
    }
    // Per source: a fixed part (ledger appends, parsing, threads) and a part per row.
    let (fixed_ms, row_ns) = match source.kind() {
        "csv" => (50, 100),
        "parquet" => (100, 400),
        // A Spark job's scheduling alone takes a tenth of a second or more.
        "spark" => (1000, 100),
        _ => (200, 500),
    };
    match d.neighbours {
        crate::privacy::Neighbours::Replace => {
            let rows_ms = source.n_rows().saturating_mul(row_ns) / 1_000_000;
            Duration::from_millis(fixed_ms + rows_ms)
        }
        // n is private: a default that does not depend on it.
        crate::privacy::Neighbours::AddRemove => Duration::from_millis(ADD_REMOVE_DEFAULT_MS),
    }
}

/// The warning for a dataset whose policy turns padding off (`response_ms = 0`): what its
/// answers' timing is then left to tell, by the kind of its source. `None` when it is padded.
pub fn unpadded_note(d: &Dataset, source: &Source) -> Option<String> {
    if d.response_ms != Some(0) {
        return None;
    }
    let what = match source.kind() {
        "csv" => "what the cells read is constant, but caches and the thread pool still follow the data",
        "parquet" => {
            "Parquet's decoder takes longer on row groups of more distinct values or less compressible pages, so a stopwatch can tell such facts of the data"
        }
        _ => "the database's own plans and caches follow the data, so a stopwatch can tell facts of it",
    };
    Some(format!(
        "dataset `{}`: padding is off (response_ms = 0): {what}; a deadline hides it",
        d.name
    ))
}

/// The deadline of a dataset under `add_remove` whose policy does not set `response_ms`.
const ADD_REMOVE_DEFAULT_MS: u64 = 1000;

/// When a statement that started at `start` and read datasets with `deadline` (the longest
/// of theirs) may answer: at the deadline, or when it overran, at the first multiple of it
/// after the time it took. Returns that instant and the multiple.
fn padded(start: Instant, took: Duration, deadline: Duration) -> (Instant, u32) {
    if deadline.is_zero() {
        return (start + took, 0);
    }
    let k = took.as_nanos().div_ceil(deadline.as_nanos()).max(1);
    let k = u32::try_from(k).unwrap_or(u32::MAX);
    (start + deadline.saturating_mul(k), k)
}

/// Reads a served dataset's rows as its policy declares them, with the identity of their data:
/// a CSV file into memory (its units bounded), Parquet files by their metadata, or a
/// PostgreSQL table by its schema and row count (its rows stay in the database).
pub fn read_dataset(d: &Dataset) -> Result<(Arc<Source>, [u8; 32]), String> {
    let fail =
        |e: crate::data::DataError| format!("dataset `{}`: cannot load {}: {e}", d.name, d.source);
    let path = match &d.source {
        DataSource::Postgres { conninfo, table } => {
            let opened = crate::data::open_postgres(conninfo, table).map_err(fail)?;
            let content = crate::data::postgres_content(&opened.key);
            return Ok((Arc::new(Source::Postgres(Box::new(opened.table))), content));
        }
        #[cfg(feature = "spark")]
        DataSource::Spark { url, table } => {
            let opened = crate::data::open_spark(url, table).map_err(fail)?;
            let content = crate::data::spark_content(&opened.key);
            return Ok((Arc::new(Source::Spark(Box::new(opened.table))), content));
        }
        #[cfg(not(feature = "spark"))]
        DataSource::Spark { .. } => {
            return Err(format!(
                "dataset `{}`: cannot load {}: this build of dpq has no Spark: build it with `cargo build --features spark`",
                d.name, d.source
            ))
        }
        DataSource::File(path) if crate::data::is_parquet_path(path) => {
            let table = crate::data::open_parquet(path).map_err(fail)?;
            let content = crate::data::parquet_content(&table).map_err(fail)?;
            // Served: every question reads every row group, whatever the values' bounds.
            let mut source = Source::Parquet(table);
            source.constant_work();
            return Ok((Arc::new(source), content));
        }
        DataSource::File(path) => path,
    };
    let options = LoadOptions {
        header: d.header,
        format: d.format,
        columns: d.columns.clone(),
        ..LoadOptions::default()
    };
    let loaded = load_csv(path, &options).map_err(fail)?;
    let table = match &d.unit {
        None => loaded.table,
        Some(u) => {
            let t = &loaded.table;
            let column = t
                .column_index(&u.column)
                .filter(|&c| t.column_name(c) == u.column)
                .ok_or_else(|| {
                    format!(
                        "dataset `{}`: its privacy unit `{}` is not a column of {}",
                        d.name,
                        crate::data::escape_name(&u.column),
                        d.source
                    )
                })?;
            crate::data::bound_units(t, column, u.max_rows)
        }
    };
    // Served: lanes as wide as public facts say, whatever the values' range.
    let table = table.with_public_widths(d.columns.as_deref());
    Ok((Arc::new(Source::Memory(table)), loaded.content.bytes()))
}

fn served(
    d: &Dataset,
    table: &Arc<Source>,
    content: [u8; 32],
    analyst: Option<(String, rust_decimal::Decimal)>,
) -> ServedTable {
    ServedTable {
        name: d.name.clone(),
        id: d.id.clone(),
        table: Arc::clone(table),
        content,
        header: d.header,
        format: d.format,
        neighbours: d.neighbours,
        unit: d.unit.clone(),
        declared: d.columns.clone().unwrap_or_default(),
        total: d.budget,
        rules: analyst.as_ref().map(|_| d.rules.clone()),
        analyst,
    }
}

/// A refusal of a whole request. The connection is closed after it: a client refused once
/// does not keep a connection open for nothing.
fn problem(status: StatusCode, text: impl Into<String>) -> Response {
    let mut r = (
        status,
        Json(Problem {
            problem: text.into(),
        }),
    )
        .into_response();
    r.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    r
}

/// The refusal of a request larger than the limit.
fn too_large(limits: Limits) -> Response {
    problem(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "the request is larger than this server's limit of {} bytes",
            limits.max_request_bytes
        ),
    )
}

/// The analyst whose token the request carries.
fn analyst(app: &App, headers: &HeaderMap) -> Result<Arc<Analyst>, Box<Response>> {
    let unauthorized = || {
        let mut r = Box::new(problem(
            StatusCode::UNAUTHORIZED,
            "a valid token is needed: Authorization: Bearer TOKEN",
        ));
        r.headers_mut().insert(
            axum::http::header::WWW_AUTHENTICATE,
            axum::http::HeaderValue::from_static("Bearer"),
        );
        r
    };
    let token = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or_else(unauthorized)?;
    let hash = *super::token::hash(token).as_bytes();
    app.analysts.get(&hash).cloned().ok_or_else(unauthorized)
}

async fn catalog(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    match analyst(&app, &headers) {
        Ok(a) => Json(a.catalog.clone()).into_response(),
        Err(r) => *r,
    }
}

/// `GET /v1/account`: who the token is, and what each of their datasets has left.
async fn account(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let who = match analyst(&app, &headers) {
        Ok(a) => a,
        Err(r) => return *r,
    };
    // Counted with the analyst's requests under way, as a run is: a flood of them never
    // holds the threads others need.
    let Ok(permit) = Arc::clone(&who.in_flight).try_acquire_owned() else {
        return problem(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "at most {} requests of one analyst may be under way at once",
                app.limits.max_requests_in_flight
            ),
        );
    };
    // The sessions' locks may wait for a request under way: not on the server's own threads.
    let worker = Arc::clone(&app);
    let done = tokio::task::spawn_blocking(move || {
        let account = worker.account(&who);
        drop(permit);
        account
    });
    match done.await {
        Ok(account) => Json(account).into_response(),
        Err(_) => problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the request failed inside the server",
        ),
    }
}

async fn run(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let who = match analyst(&app, &headers) {
        Ok(a) => a,
        Err(r) => return *r,
    };
    let body = match body {
        Ok(b) => b,
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => return too_large(app.limits),
        Err(_) => {
            return problem(
                StatusCode::REQUEST_TIMEOUT,
                "the request's body did not arrive whole in time",
            )
        }
    };
    let request: RunRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(_) => {
            return problem(
                StatusCode::BAD_REQUEST,
                "the body must be JSON: {\"source\": \"STATEMENTS\"}",
            )
        }
    };
    let (pieces, _) = syntax::split::split(&request.source);
    if pieces.len() > app.limits.max_statements {
        return problem(
            StatusCode::BAD_REQUEST,
            format!(
                "at most {} statements per request",
                app.limits.max_statements
            ),
        );
    }
    let Ok(permit) = Arc::clone(&who.in_flight).try_acquire_owned() else {
        return problem(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "at most {} requests of one analyst may be under way at once",
                app.limits.max_requests_in_flight
            ),
        );
    };
    let started = Instant::now();
    let deadline = started + Duration::from_millis(app.limits.request_millis);
    let worker = Arc::clone(&app);
    let done = tokio::task::spawn_blocking(move || {
        let mut session = who.session.lock().unwrap_or_else(PoisonError::into_inner);
        let limits = (deadline, worker.limits.max_response_bytes);
        let response = run_statements(
            &mut session,
            &request.source,
            limits,
            &worker.deadlines,
            &mut |a| {
                worker.write_audit(&who.name, a);
                worker.record(&who.name, a);
            },
        );
        drop(session);
        drop(permit);
        response
    })
    .await;
    match done {
        Ok(response) => Json(response).into_response(),
        Err(_) => {
            // A statement that failed inside the server left before its padding: the reply
            // waits for the longest deadline of any dataset instead, so that when it comes
            // says nothing of how far the statement got.
            let longest = app.deadlines.values().max().copied().unwrap_or_default();
            tokio::time::sleep_until((started + longest).into()).await;
            problem(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the request failed inside the server; nothing after its last recorded statement was run",
            )
        }
    }
}

/// One statement as the audit log records it: who asked what, and what it cost; never an
/// answer. With what the curator's log shows of it.
struct Audited {
    statement: String,
    table: Option<String>,
    outcome: serde_json::Value,
    /// The statement's kind (`COUNT`), how it ended, the epsilon it spent, and the analyst's
    /// budget on the table after it.
    kind: &'static str,
    ended: Outcome,
    eps_spent: rust_decimal::Decimal,
    budget: Option<Budget>,
}

impl App {
    /// Counts a statement in the run's tally and hands its record to the curator's log. Both
    /// take a moment that depends on no data (the record holds public facts only), inside the
    /// statement's padded time.
    fn record(&self, analyst: &str, l: &Audited) {
        let activity = Activity {
            time: std::time::SystemTime::now(),
            analyst: analyst.to_string(),
            dataset: l.table.clone(),
            statement: l.kind,
            outcome: l.ended,
            eps_spent: l.eps_spent,
            budget: l.budget,
        };
        self.tally
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(&activity);
        if let Some(log) = &self.log {
            log(&activity);
        }
    }

    /// The analyst's datasets with their public facts and budgets: their own and, where the
    /// policy shows it, the dataset's over all its analysts.
    fn account(&self, who: &Analyst) -> Account {
        let mut session = who.session.lock().unwrap_or_else(PoisonError::into_inner);
        let tables = own_budgets(&mut session);
        drop(session);
        let mut curator = self.curator.lock().unwrap_or_else(PoisonError::into_inner);
        let datasets = tables
            .into_iter()
            .map(|t| AccountDataset {
                dataset: self
                    .shown
                    .contains(&t.name)
                    .then(|| whole_budget(&mut curator, &t.name))
                    .flatten()
                    .map(amounts),
                name: t.name,
                n: t.n,
                budget: amounts(t.budget),
                unit: t.accounting.unit().to_string(),
            })
            .collect();
        Account {
            analyst: who.name.clone(),
            datasets,
        }
    }

    /// The run's totals, and each dataset's budget as its ledger now says.
    fn summary(&self, policy: &Policy) -> Summary {
        let analysts = self
            .tally
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .analysts();
        let mut curator = self.curator.lock().unwrap_or_else(PoisonError::into_inner);
        let datasets = policy
            .datasets
            .iter()
            .filter_map(|d| Some((d.name.clone(), whole_budget(&mut curator, &d.name)?)))
            .collect();
        Summary {
            analysts,
            datasets,
            durable: crate::privacy::durable::counts(),
        }
    }

    /// Appends a statement's audit line, as soon as the statement has run (before the next
    /// one, and before the answer leaves). Not made durable: the ledger's spending lines,
    /// which name the analyst and the statement, are the durable record of every spending.
    fn write_audit(&self, analyst: &str, l: &Audited) {
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut line = serde_json::json!({
            "time": time,
            "analyst": analyst,
            "dataset": l.table,
            "statement": l.statement,
            "outcome": l.outcome,
        })
        .to_string();
        line.push('\n');
        let mut file = self.audit.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = file.write_all(line.as_bytes()) {
            // The server's own log: the curator's, not the analyst's.
            eprintln!("dpq serve: the audit log could not be written: {e}");
        }
    }
}

/// Runs the statements of `source` in order until one fails, the deadline passes or the
/// results reach the response limit (`limits`); each statement's audit line goes to `audit`
/// as soon as it has run. A statement that read a dataset's rows ends no earlier than the
/// dataset's deadline after it began (see [`padded`]): its result, its audit line and the
/// next statement wait for it.
fn run_statements(
    session: &mut Session,
    source: &str,
    limits: (Instant, usize),
    deadlines: &Deadlines,
    audit: &mut dyn FnMut(&Audited),
) -> RunResponse {
    let (deadline, max_bytes) = limits;
    let (pieces, split_error) = syntax::split::split(source);
    let mut results = Vec::new();
    let mut bytes = 0usize;
    let mut error = None;
    for (k, piece) in pieces.iter().enumerate() {
        let text = source
            .get(piece.span.start..piece.span.end)
            .unwrap_or_default()
            .trim()
            .to_string();
        let stop = if bytes > max_bytes {
            Some(format!(
                "the results passed this server's limit of {max_bytes} bytes: this statement and those after it were not run"
            ))
        } else if k > 0 && Instant::now() > deadline {
            Some("the request's time limit was reached: this statement and those after it were not run".to_string())
        } else {
            None
        };
        if let Some(message) = stop {
            error = Some(ErrorBody {
                message,
                help: Some("send fewer statements at a time".into()),
                start: Some(piece.span.start),
                end: Some(piece.span.end),
                class: Some("Refused".into()),
            });
            break;
        }
        let asked = session.questions_asked();
        let start = Instant::now();
        let parsed = syntax::parse_statement_at(source, piece.span).map_err(Error::from);
        let kind = parsed.as_ref().map_or("?", |s| statement_kind(&s.kind));
        let result = parsed.and_then(|stmt| session.execute(&stmt));
        let deadline = deadline_of(deadlines, &asked, &session.questions_asked());
        // The analyst's budget on the table after the statement, for the curator's log.
        let info = session.current_table_info();
        let (table, budget) = (
            info.as_ref().map(|t| t.name.clone()),
            info.map(|t| t.budget),
        );
        let (outcome, done, ended) = match result {
            Ok(response) => {
                let json_text = render_json(&response);
                let json: serde_json::Value =
                    serde_json::from_str(&json_text).unwrap_or(serde_json::Value::Null);
                let rendered = render_table(&response);
                bytes += json_text.len() + rendered.len();
                let outcome = cost(&json);
                let ended = Outcome::of_result(&json);
                results.push(StatementResult {
                    json,
                    table: rendered,
                });
                (outcome, None, ended)
            }
            Err(e) => {
                let body = error_body(&e);
                let outcome = serde_json::json!({ "error": body.message });
                (outcome, Some(body), Outcome::of_error(&e))
            }
        };
        let (until, multiple) = padded(start, start.elapsed(), deadline);
        let mut outcome = outcome;
        if multiple > 1 {
            overran(table.as_deref(), start, deadline, multiple, &mut outcome);
        }
        audit(&Audited {
            statement: text,
            table,
            outcome,
            kind,
            ended: ended.0,
            eps_spent: ended.1,
            budget,
        });
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
        if let Some(body) = done {
            error = Some(body);
            break;
        }
    }
    if error.is_none() {
        if let Some(e) = split_error {
            error = Some(error_body(&Error::from(e)));
        }
    }
    RunResponse { results, error }
}

/// Tells the curator that a statement that began at `start` overran its `deadline` (the
/// deadline was too short for it), on standard error and in its audit `outcome`.
fn overran(
    table: Option<&str>,
    start: Instant,
    deadline: Duration,
    multiple: u32,
    outcome: &mut serde_json::Value,
) {
    eprintln!(
        "dpq serve: a statement on `{}` took {} ms, over its deadline of {} ms; answered at {} times the deadline",
        table.unwrap_or("?"),
        start.elapsed().as_millis(),
        deadline.as_millis(),
        multiple
    );
    if let Some(o) = outcome.as_object_mut() {
        o.insert(
            "overran_deadline_ms".into(),
            serde_json::json!(deadline.as_millis() as u64),
        );
    }
}

/// The deadline of a statement that asked the questions between `before` and `after` (each
/// table's count): the longest of the datasets it read, zero when it read none.
fn deadline_of(
    deadlines: &Deadlines,
    before: &[(String, u64)],
    after: &[(String, u64)],
) -> Duration {
    after
        .iter()
        .filter(|(name, n)| {
            let was = before
                .iter()
                .find(|(b, _)| b == name)
                .map_or(0, |(_, m)| *m);
            *n > was
        })
        .filter_map(|(name, _)| deadlines.get(name))
        .copied()
        .max()
        .unwrap_or(Duration::ZERO)
}

/// A budget as the API carries it.
fn amounts(b: Budget) -> Amounts {
    use rust_decimal::prelude::ToPrimitive;
    let f = |d: rust_decimal::Decimal| d.to_f64().unwrap_or(f64::NAN);
    Amounts {
        total: f(b.total),
        spent: f(b.spent),
        remaining: f(b.remaining),
    }
}

/// What the audit log says a result cost: its kind, the epsilon it spent and whether it came
/// from the history. Never its answer.
fn cost(json: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "kind": json.get("kind"),
        "eps_spent": json.get("eps_spent"),
        "from_history": json.get("from_history"),
    })
}

/// An error as an analyst is told it. A ledger's errors name the server's files: the analyst
/// gets a fixed message, and the curator the whole error on the server's standard error.
fn error_body(e: &Error) -> ErrorBody {
    use crate::error::EvalError;
    use crate::privacy::LedgerError;
    let d = e.diagnostic();
    let (message, help) = match e {
        Error::Eval(EvalError::Ledger { error, .. }) => {
            eprintln!("dpq serve: {}", d.message);
            match error {
                LedgerError::TooLong { .. } => (
                    "the statement is too long to record in the dataset's ledger; nothing was spent".to_string(),
                    Some("shorten the statement".to_string()),
                ),
                _ => (
                    "the dataset's ledger cannot be used now; nothing was spent, and the server's curator has the details".to_string(),
                    None,
                ),
            }
        }
        Error::Eval(EvalError::AnswerNotRecorded { eps, .. }) => {
            eprintln!("dpq serve: {}", d.message);
            (
                format!(
                    "the answer could not be recorded, so it is not shown; its epsilon {} is spent",
                    eps.normalize()
                ),
                None,
            )
        }
        _ => (d.message, d.help),
    };
    ErrorBody {
        message,
        help,
        start: d.span.map(|s| s.start),
        end: d.span.map(|s| s.end),
        class: Some(e.class().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_is_held_to_its_deadline_or_the_next_multiple() {
        let start = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(padded(start, ms(3), ms(100)), (start + ms(100), 1));
        assert_eq!(padded(start, ms(100), ms(100)), (start + ms(100), 1));
        assert_eq!(padded(start, ms(101), ms(100)), (start + ms(200), 2));
        assert_eq!(padded(start, ms(250), ms(100)), (start + ms(300), 3));
        // No deadline: as it came.
        assert_eq!(padded(start, ms(7), Duration::ZERO), (start + ms(7), 0));
    }

    #[test]
    fn the_deadline_is_that_of_the_datasets_a_statement_read() {
        let d: Deadlines = [
            ("a".to_string(), Duration::from_millis(50)),
            ("b".to_string(), Duration::from_millis(80)),
        ]
        .into_iter()
        .collect();
        let before = vec![("a".to_string(), 3), ("b".to_string(), 1)];
        let read_a = vec![("a".to_string(), 4), ("b".to_string(), 1)];
        let read_both = vec![("a".to_string(), 4), ("b".to_string(), 2)];
        assert_eq!(deadline_of(&d, &before, &before), Duration::ZERO);
        assert_eq!(deadline_of(&d, &before, &read_a), Duration::from_millis(50));
        assert_eq!(
            deadline_of(&d, &before, &read_both),
            Duration::from_millis(80)
        );
        // A table loaded by the statement itself counts from zero.
        let loaded = vec![
            ("a".to_string(), 3),
            ("b".to_string(), 1),
            ("c".to_string(), 1),
        ];
        assert_eq!(deadline_of(&d, &before, &loaded), Duration::ZERO);
    }
}
