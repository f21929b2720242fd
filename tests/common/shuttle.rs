//! The shuttle models' harness (tests/shuttle_*.rs, built with
//! `RUSTFLAGS="--cfg shuttle"`): how a model's scenario is explored, and
//! how a deliberately broken variant is shown caught. Each model keeps its
//! own scenarios, iteration counts and seed; this is the one copy of the
//! rest. Two ways, as the models are written:
//!
//! - seeded ([`holds`], [`caught`], over [`explore`]; [`variant_holds`]
//!   and [`variant_caught`] where a model's variants are an enum): PCT,
//!   then the random scheduler, from a fixed seed (CI explores the same
//!   schedules every run; `HASHWHEEL_SHUTTLE_SEED` picks others, see
//!   [`seed`]), quietly ([`config`]), counting the schedules; a failure
//!   comes back as its message, so that a broken variant's test can say
//!   where it was caught;
//! - [`check`]: shuttle's `check_random`, then `check_pct`, from fresh
//!   seeds and with shuttle's default config (a failure panics, printing
//!   its schedule to replay), for models whose broken variants are
//!   `#[should_panic]` tests.

use std::fmt::Debug;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use ::shuttle::scheduler::{PctScheduler, RandomScheduler, Scheduler};
use ::shuttle::{Config, FailurePersistence, Runner};

/// PCT's bound on the preemptions that matter, in every model.
pub const PCT_DEPTH: usize = 3;

/// A scenario: one schedule's run of a model, panicking where it fails.
type Scenario = Arc<dyn Fn() + Send + Sync>;

/// The seeded runs' config: no failing schedule persisted or printed (the
/// failure's message is returned), no warnings.
pub fn config() -> Config {
    let mut config = Config::new();
    config.failure_persistence = FailurePersistence::None;
    config.silence_warnings = true;
    config
}

/// The schedulers' seed: the model's `default`, fixed, so that CI explores
/// the same schedules every run; `HASHWHEEL_SHUTTLE_SEED` picks others
/// (`scripts/soak.sh` gives each round its own).
pub fn seed(default: u64) -> u64 {
    std::env::var("HASHWHEEL_SHUTTLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Runs `scenario` under `scheduler`: the schedules explored, or the first
/// failure's message, with the schedule it failed in.
fn run(scheduler: impl Scheduler + 'static, scenario: &Scenario) -> Result<usize, String> {
    let runs = Arc::new(AtomicUsize::new(0));
    let (count, scenario) = (runs.clone(), scenario.clone());
    catch_unwind(AssertUnwindSafe(|| {
        Runner::new(scheduler, config()).run(move || {
            count.fetch_add(1, Relaxed);
            scenario();
        })
    }))
    .map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        let runs = runs.load(Relaxed);
        format!("schedule {runs}: {message}")
    })
}

/// Runs `scenario` under PCT, then the random scheduler, from `seed`,
/// `iterations` schedules each; returns the schedules explored, or the
/// first failure's message.
pub fn explore(
    name: &str,
    seed: u64,
    iterations: usize,
    scenario: impl Fn() + Send + Sync + 'static,
) -> Result<usize, String> {
    let scenario: Scenario = Arc::new(scenario);
    let pct = run(
        PctScheduler::new_from_seed(seed, PCT_DEPTH, iterations),
        &scenario,
    )?;
    let random = run(RandomScheduler::new_from_seed(seed, iterations), &scenario)?;
    println!("{name}: {pct} PCT and {random} random schedules explored (seed {seed})");
    Ok(pct + random)
}

/// The model holds: every schedule of both schedulers passes, and all
/// `2 * iterations` of them ran.
pub fn holds(
    name: &str,
    seed: u64,
    iterations: usize,
    scenario: impl Fn() + Send + Sync + 'static,
) {
    let explored = explore(name, seed, iterations, scenario)
        .unwrap_or_else(|failure| panic!("{name}, seed {seed}: {failure}"));
    assert_eq!(explored, 2 * iterations);
}

/// A broken variant is caught: some schedule fails. Returns (and prints)
/// the failure's message.
pub fn caught(
    name: &str,
    seed: u64,
    iterations: usize,
    scenario: impl Fn() + Send + Sync + 'static,
) -> String {
    match explore(name, seed, iterations, scenario) {
        Ok(explored) => panic!("{name}: the broken variant passed {explored} schedules"),
        Err(failure) => {
            println!("{name}: caught at {failure}");
            failure
        }
    }
}

/// [`holds`] for a model whose variants are an enum, named by their
/// `Debug`: the model with `variant` holds, from the model's `seed` (or
/// `HASHWHEEL_SHUTTLE_SEED`).
pub fn variant_holds<V>(scenario: fn(V), variant: V, seed: u64, iterations: usize)
where
    V: Debug + Copy + Send + Sync + 'static,
{
    let name = format!("{variant:?}");
    holds(&name, self::seed(seed), iterations, move || {
        scenario(variant)
    });
}

/// [`caught`] for a model whose variants are an enum: the broken `variant`
/// fails in some schedule, from the model's `seed` (or
/// `HASHWHEEL_SHUTTLE_SEED`).
pub fn variant_caught<V>(scenario: fn(V), variant: V, seed: u64, iterations: usize)
where
    V: Debug + Copy + Send + Sync + 'static,
{
    let name = format!("{variant:?}");
    caught(&name, self::seed(seed), iterations, move || {
        scenario(variant)
    });
}

/// Shuttle's random scheduler, then PCT, `iterations` schedules each, from
/// fresh seeds: a failure panics (shuttle prints its schedule and seed).
pub fn check(iterations: usize, scenario: impl Fn() + Send + Sync + 'static) {
    let scenario = Arc::new(scenario);
    let random = scenario.clone();
    ::shuttle::check_random(move || random(), iterations);
    ::shuttle::check_pct(move || scenario(), iterations, PCT_DEPTH);
}
