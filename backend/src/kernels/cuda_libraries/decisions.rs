//! Whether a vendor library runs each problem (a convolution's computation, a GEMM), decided
//! so that no failure of the library can fail the run: each device's handle is created once,
//! waiting, at its first use; a problem's algorithm is searched once, waiting; and the first
//! run of each problem on each device waits for the library's status. Any failure there (a
//! handle that cannot be created, a search that fails or finds nothing, a run refused with a
//! warm cache) becomes a decline: remembered for that problem, said once in one line naming the
//! library, the call, its status and the problem, and the op runs on CubeCL's kernels from then
//! on. Only a problem that has already run once on its device is queued without waiting (the
//! same descriptors, algorithm, workspace size and alignment that succeeded), as PyTorch's
//! cuDNN path trusts a plan once it has executed.
//!
//! The library's calls are a trait ([`LibraryCalls`]) so that all of this is tested without a
//! GPU, with calls that fail on demand; CUDA's are in `install`.

use std::collections::HashMap;
use std::sync::Mutex;

/// A library call that did not succeed: the call and its status in the library's words (or
/// what kept it from running at all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The call (`cudnnConvolutionForward`).
    pub call: String,
    /// Its status (`CUDNN_STATUS_NOT_SUPPORTED (the operation or feature is not supported)`).
    pub status: String,
}

impl Failure {
    /// A failure of `call` with `status`.
    pub fn new(call: impl Into<String>, status: impl Into<String>) -> Failure {
        Failure { call: call.into(), status: status.into() }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed ({})", self.call, self.status)
    }
}

/// The line a decline of one problem says.
fn failed_line(library: &str, what: &str, key: &str, f: &Failure) -> String {
    format!("owt: {library}'s {f} for the {what} {key}; it runs on CubeCL's kernels")
}

/// What a search found for a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Searched<C> {
    /// The choice, or `None` where no algorithm of the library runs the problem.
    pub choice: Option<C>,
    /// Whether the search had all it asked for (its whole workspace): only a complete search is
    /// kept across runs, so a search squeezed by memory another run held is made again.
    pub complete: bool,
}

/// The calls of one library for one kind of problem. Every call but [`LibraryCalls::run_queued`]
/// waits for its outcome.
pub trait LibraryCalls {
    /// One problem, as the library describes it.
    type Problem;
    /// What a search chooses for a problem (an algorithm).
    type Choice: Copy;
    /// The buffers a search or a run reads and writes.
    type Operands;

    /// The library's name (`cuDNN`).
    fn library(&self) -> &'static str;
    /// What one problem is, in words (`convolution`, `matmul`).
    fn problem_kind(&self) -> &'static str;
    /// Creates the library's handle for `device`.
    fn open(&self, device: usize) -> Result<(), Failure>;
    /// Chooses an algorithm for `problem` on `device`, running candidates on `operands` where
    /// the library measures them.
    fn search(
        &self,
        device: usize,
        problem: &Self::Problem,
        operands: &Self::Operands,
    ) -> Result<Searched<Self::Choice>, Failure>;
    /// Runs `problem` with `choice` and waits for the library's status.
    fn run_and_wait(
        &self,
        device: usize,
        problem: &Self::Problem,
        choice: Self::Choice,
        operands: &Self::Operands,
    ) -> Result<(), Failure>;
    /// Queues `problem` with `choice` without waiting (it ran once on `device` already); `Err`
    /// where it could not be queued (nothing was: the op can still run elsewhere).
    fn run_queued(
        &self,
        device: usize,
        problem: &Self::Problem,
        choice: Self::Choice,
        operands: Self::Operands,
    ) -> Result<(), Failure>;
}

/// Choices kept across runs, by problem key (cuDNN's algorithm cache for one GPU).
pub trait Remembered<C> {
    /// What is kept for `key`: `None` if nothing, `Some(None)` where no algorithm runs it.
    fn get(&self, key: &str) -> Option<Option<C>>;
    /// Keeps what a complete search found for `key`.
    fn keep(&self, key: &str, choice: Option<C>);
    /// Forgets `key` (its choice failed here, so the next run searches again).
    fn forget(&self, key: &str);
}

/// Nothing kept across runs (cuBLASLt: its heuristic answers at once).
pub struct NothingRemembered;

impl<C> Remembered<C> for NothingRemembered {
    fn get(&self, _key: &str) -> Option<Option<C>> {
        None
    }
    fn keep(&self, _key: &str, _choice: Option<C>) {}
    fn forget(&self, _key: &str) {}
}

/// One problem on one device, once decided (until then it has no state: the next call decides,
/// its first run waiting for the library's status).
#[derive(Debug, Clone)]
enum State<C> {
    /// Ran once on this device: later calls are queued.
    Proven(C),
    /// Left to CubeCL's kernels, and why.
    Declined(String),
}

/// The most decline lines [`Decisions::lines`] keeps (each is also said as it happens).
const MAX_LINES: usize = 64;

/// Where each decline's line goes as it happens (standard error unless a program says).
pub type Reporter = fn(&str);

fn to_stderr(line: &str) {
    eprintln!("{line}");
}

/// What one library decided, per device and per problem, in this process.
pub struct Decisions<C> {
    /// Per device: `None` where its handle was created, the line where it could not be.
    devices: Mutex<HashMap<usize, Option<String>>>,
    /// Per device and problem key.
    problems: Mutex<HashMap<(usize, String), State<C>>>,
    /// Held while anything that waits on the device is decided, so a problem is searched and
    /// first run once however many ranks ask for it at once.
    deciding: Mutex<()>,
    /// Every decline's line, in order (at most [`MAX_LINES`]).
    lines: Mutex<Vec<String>>,
    reporter: Reporter,
}

impl<C: Copy> Default for Decisions<C> {
    fn default() -> Self {
        Self::new(to_stderr)
    }
}

impl<C: Copy> Decisions<C> {
    /// Nothing decided yet; each decline's line goes to `reporter` as it happens.
    pub fn new(reporter: Reporter) -> Self {
        Self {
            devices: Mutex::default(),
            problems: Mutex::default(),
            deciding: Mutex::default(),
            lines: Mutex::default(),
            reporter,
        }
    }

    /// The lines said so far, one per decline (a device or a problem).
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn say(&self, line: String) -> String {
        (self.reporter)(&line);
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() < MAX_LINES {
            lines.push(line.clone());
        }
        line
    }

    fn state(&self, device: usize, key: &str) -> Option<State<C>> {
        self.problems.lock().unwrap_or_else(|e| e.into_inner()).get(&(device, key.to_string())).cloned()
    }

    fn set(&self, device: usize, key: &str, state: State<C>) {
        self.problems.lock().unwrap_or_else(|e| e.into_inner()).insert((device, key.to_string()), state);
    }

    /// Records that a queued run of `key` on `device` failed (on the device thread, after the
    /// call that queued it returned): the problem is declined from then on, its line said, and
    /// the line returned for the stream's error (that run's output was not written).
    pub fn failed_later(&self, device: usize, key: &str, library: &str, what: &str, f: &Failure) -> String {
        let line = failed_line(library, what, key, f);
        let first = !matches!(self.state(device, key), Some(State::Declined(_)));
        self.set(device, key, State::Declined(line.clone()));
        if first {
            self.say(line.clone());
        }
        line
    }

    /// Has `calls` run `problem` (known by `key`) on `device` with `operands`: queued where it
    /// ran there before, else after what is needed first (the device's handle, the algorithm
    /// from `remembered` or a search, a first run that waits). `Err` with the reason where the
    /// library does not run it: the caller runs it on CubeCL's kernels.
    pub fn call<L: LibraryCalls<Choice = C>>(
        &self,
        calls: &L,
        remembered: &dyn Remembered<C>,
        device: usize,
        key: &str,
        problem: &L::Problem,
        operands: L::Operands,
    ) -> Result<(), String> {
        let (library, what) = (calls.library(), calls.problem_kind());
        match self.state(device, key) {
            Some(State::Proven(choice)) => {
                return calls
                    .run_queued(device, problem, choice, operands)
                    .map_err(|f| self.failed_later(device, key, library, what, &f));
            }
            Some(State::Declined(why)) => return Err(why),
            _ => {}
        }
        let _deciding = self.deciding.lock().unwrap_or_else(|e| e.into_inner());
        let failed = |f: &Failure| failed_line(library, what, key, f);
        // The device's handle, created once.
        let opened = self.devices.lock().unwrap_or_else(|e| e.into_inner()).get(&device).cloned();
        let opened = match opened {
            Some(opened) => opened,
            None => {
                let opened = calls.open(device).err().map(|f| {
                    self.say(format!("owt: {library}'s {f} on GPU {device}; its {what}s run on CubeCL's kernels"))
                });
                self.devices.lock().unwrap_or_else(|e| e.into_inner()).insert(device, opened.clone());
                opened
            }
        };
        if let Some(why) = opened {
            self.set(device, key, State::Declined(why.clone()));
            return Err(why);
        }
        let choice = match self.state(device, key) {
            // Another rank proved it while this one waited to decide.
            Some(State::Proven(choice)) => {
                return calls
                    .run_queued(device, problem, choice, operands)
                    .map_err(|f| self.failed_later(device, key, library, what, &f));
            }
            Some(State::Declined(why)) => return Err(why),
            None => {
                let kept = remembered.get(key);
                let found = match kept {
                    Some(found) => Ok(found),
                    None => calls.search(device, problem, &operands).map(|searched| {
                        if searched.complete {
                            remembered.keep(key, searched.choice);
                        }
                        searched.choice
                    }),
                };
                match found {
                    Ok(Some(choice)) => choice,
                    Ok(None) => {
                        let why = self.say(format!(
                            "owt: no {library} algorithm runs the {what} {key}; it runs on CubeCL's kernels"
                        ));
                        self.set(device, key, State::Declined(why.clone()));
                        return Err(why);
                    }
                    Err(f) => {
                        let why = self.say(failed(&f));
                        self.set(device, key, State::Declined(why.clone()));
                        return Err(why);
                    }
                }
            }
        };
        match calls.run_and_wait(device, problem, choice, &operands) {
            Ok(()) => {
                self.set(device, key, State::Proven(choice));
                Ok(())
            }
            Err(f) => {
                remembered.forget(key);
                let why = self.say(failed(&f));
                self.set(device, key, State::Declined(why.clone()));
                Err(why)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A library whose calls count themselves and fail as told: `open`, `search` and
    /// `run_and_wait` fail while their `*_fails` counter is above zero (each failure uses one).
    #[derive(Default)]
    struct Fake {
        opens: AtomicUsize,
        searches: AtomicUsize,
        waited: AtomicUsize,
        queued: AtomicUsize,
        open_fails: AtomicUsize,
        search_fails: AtomicUsize,
        run_fails: AtomicUsize,
        queue_fails: AtomicUsize,
        /// What a search finds (an algorithm number), `None` for nothing.
        finds: Option<u32>,
        /// Whether a search had its whole workspace.
        complete: bool,
    }

    fn uses_one(counter: &AtomicUsize) -> bool {
        counter.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
    }

    impl LibraryCalls for Fake {
        type Problem = ();
        type Choice = u32;
        type Operands = ();
        fn library(&self) -> &'static str {
            "cuDNN"
        }
        fn problem_kind(&self) -> &'static str {
            "convolution"
        }
        fn open(&self, _device: usize) -> Result<(), Failure> {
            self.opens.fetch_add(1, Ordering::SeqCst);
            match uses_one(&self.open_fails) {
                true => Err(Failure::new("cudnnCreate", "CUDNN_STATUS_NOT_INITIALIZED")),
                false => Ok(()),
            }
        }
        fn search(&self, _device: usize, _p: &(), _o: &()) -> Result<Searched<u32>, Failure> {
            self.searches.fetch_add(1, Ordering::SeqCst);
            // Slow enough that ranks asking at once overlap.
            std::thread::sleep(std::time::Duration::from_millis(5));
            match uses_one(&self.search_fails) {
                true => Err(Failure::new("cudnnFindConvolutionForwardAlgorithmEx", "CUDNN_STATUS_ALLOC_FAILED")),
                false => Ok(Searched { choice: self.finds, complete: self.complete }),
            }
        }
        fn run_and_wait(&self, _device: usize, _p: &(), _c: u32, _o: &()) -> Result<(), Failure> {
            self.waited.fetch_add(1, Ordering::SeqCst);
            match uses_one(&self.run_fails) {
                true => Err(Failure::new("cudnnConvolutionForward", "CUDNN_STATUS_EXECUTION_FAILED")),
                false => Ok(()),
            }
        }
        fn run_queued(&self, _device: usize, _p: &(), _c: u32, _o: ()) -> Result<(), Failure> {
            self.queued.fetch_add(1, Ordering::SeqCst);
            match uses_one(&self.queue_fails) {
                true => Err(Failure::new("owt's packed copy", "the tensor does not pack")),
                false => Ok(()),
            }
        }
    }

    impl Fake {
        fn finding(algo: u32) -> Fake {
            Fake { finds: Some(algo), complete: true, ..Fake::default() }
        }
        /// (opens, searches, waited runs, queued runs).
        fn counts(&self) -> [usize; 4] {
            [&self.opens, &self.searches, &self.waited, &self.queued].map(|c| c.load(Ordering::SeqCst))
        }
    }

    /// An algorithm cache in memory.
    #[derive(Default)]
    struct Kept(Mutex<BTreeMap<String, Option<u32>>>);

    impl Remembered<u32> for Kept {
        fn get(&self, key: &str) -> Option<Option<u32>> {
            self.0.lock().unwrap().get(key).copied()
        }
        fn keep(&self, key: &str, choice: Option<u32>) {
            self.0.lock().unwrap().insert(key.to_string(), choice);
        }
        fn forget(&self, key: &str) {
            self.0.lock().unwrap().remove(key);
        }
    }

    fn quiet() -> Decisions<u32> {
        Decisions::new(|_| {})
    }

    const KEY: &str =
        "fwd f32 tf32 x 2.3.8.8/192.64.8.1 w 4.3.3.3 y 2.4.6.6/144.36.6.1 pad 0.0 stride 1.1 dil 1.1 groups 1";

    #[test]
    fn a_searched_problem_runs_waiting_once_then_queued() {
        let (calls, kept, decisions) = (Fake::finding(3), Kept::default(), quiet());
        for _ in 0..4 {
            decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap();
        }
        assert_eq!(calls.counts(), [1, 1, 1, 3]);
        assert_eq!(kept.get(KEY), Some(Some(3)));
        assert!(decisions.lines().is_empty());
    }

    #[test]
    fn a_search_that_fails_twice_is_searched_once_and_declined_in_one_line() {
        let calls = Fake { search_fails: AtomicUsize::new(2), ..Fake::finding(3) };
        let (kept, decisions) = (Kept::default(), quiet());
        let first = decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap_err();
        let second = decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap_err();
        assert_eq!(first, second);
        assert_eq!(calls.counts(), [1, 1, 0, 0], "searched once, never run");
        assert_eq!(decisions.lines(), vec![first.clone()]);
        for part in ["cuDNN's cudnnFindConvolutionForwardAlgorithmEx", "CUDNN_STATUS_ALLOC_FAILED", KEY, "CubeCL"] {
            assert!(first.contains(part), "{part:?} in {first}");
        }
        assert!(!first.contains('\n'));
        // A failure is not a finding: nothing is kept for the next run.
        assert_eq!(kept.get(KEY), None);
    }

    #[test]
    fn a_warm_cache_whose_choice_fails_at_run_time_is_declined_and_forgotten() {
        let calls = Fake { run_fails: AtomicUsize::new(1), ..Fake::finding(3) };
        let kept = Kept::default();
        kept.keep(KEY, Some(5));
        let decisions = quiet();
        let why = decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap_err();
        assert!(why.contains("cudnnConvolutionForward failed (CUDNN_STATUS_EXECUTION_FAILED)"), "{why}");
        decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap_err();
        assert_eq!(calls.counts(), [1, 0, 1, 0], "no search (the cache was warm), one waiting run, nothing queued");
        assert_eq!(kept.get(KEY), None, "the next run searches again");
        assert_eq!(decisions.lines().len(), 1);
    }

    #[test]
    fn a_device_whose_handle_fails_declines_every_problem_in_one_line_and_others_go_on() {
        let calls = Fake { open_fails: AtomicUsize::new(1), ..Fake::finding(3) };
        let (kept, decisions) = (Kept::default(), quiet());
        let why = decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap_err();
        assert!(why.contains("cudnnCreate failed (CUDNN_STATUS_NOT_INITIALIZED) on GPU 0"), "{why}");
        assert_eq!(decisions.call(&calls, &kept, 0, "other", &(), ()).unwrap_err(), why);
        assert_eq!(calls.counts(), [1, 0, 0, 0], "opened once, nothing searched or run on GPU 0");
        decisions.call(&calls, &kept, 1, KEY, &(), ()).unwrap();
        assert_eq!(calls.counts(), [2, 1, 1, 0]);
        assert_eq!(decisions.lines().len(), 1, "one line for GPU 0, none per problem");
    }

    #[test]
    fn a_problem_no_algorithm_runs_is_kept_as_such_and_an_incomplete_search_not_at_all() {
        let calls = Fake { finds: None, complete: true, ..Fake::default() };
        let (kept, decisions) = (Kept::default(), quiet());
        let why = decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap_err();
        assert!(why.starts_with("owt: no cuDNN algorithm runs the convolution fwd"), "{why}");
        assert_eq!(kept.get(KEY), Some(None));
        let squeezed = Fake { complete: false, ..Fake::finding(2) };
        let (kept, decisions) = (Kept::default(), quiet());
        decisions.call(&squeezed, &kept, 0, KEY, &(), ()).unwrap();
        assert_eq!(kept.get(KEY), None, "searched with less workspace than asked: not kept");
        decisions.call(&squeezed, &kept, 0, KEY, &(), ()).unwrap();
        assert_eq!(squeezed.counts(), [1, 1, 1, 1], "still searched once in this process");
    }

    #[test]
    fn each_device_proves_a_cached_choice_itself() {
        let (calls, kept, decisions) = (Fake::finding(3), Kept::default(), quiet());
        for device in [0, 1, 0, 1] {
            decisions.call(&calls, &kept, device, KEY, &(), ()).unwrap();
        }
        assert_eq!(calls.counts(), [2, 1, 2, 2], "one search, a waiting first run on each GPU");
    }

    #[test]
    fn ranks_asking_at_once_search_and_wait_once() {
        let calls = Arc::new(Fake::finding(1));
        let kept = Arc::new(Kept::default());
        let decisions = Arc::new(quiet());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (calls, kept, decisions) = (calls.clone(), kept.clone(), decisions.clone());
                std::thread::spawn(move || decisions.call(&*calls, &*kept, 0, KEY, &(), ()).unwrap())
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(calls.counts(), [1, 1, 1, 7]);
    }

    #[test]
    fn a_queued_run_that_fails_later_declines_its_problem_from_then_on() {
        let (calls, kept, decisions) = (Fake::finding(3), Kept::default(), quiet());
        decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap();
        decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap();
        let f = Failure::new("cudnnConvolutionForward", "CUDNN_STATUS_EXECUTION_FAILED");
        let line = decisions.failed_later(0, KEY, "cuDNN", "convolution", &f);
        assert!(line.contains("cuDNN's cudnnConvolutionForward failed (CUDNN_STATUS_EXECUTION_FAILED)"), "{line}");
        assert_eq!(decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap_err(), line);
        assert_eq!(calls.counts(), [1, 1, 1, 1], "nothing run after the failure");
        decisions.failed_later(0, KEY, "cuDNN", "convolution", &f);
        assert_eq!(decisions.lines(), vec![line], "said once");
    }

    #[test]
    fn a_run_that_cannot_be_queued_is_declined_there_and_then() {
        let calls = Fake { queue_fails: AtomicUsize::new(1), ..Fake::finding(3) };
        let (kept, decisions) = (Kept::default(), quiet());
        decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap();
        let why = decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap_err();
        assert!(why.contains("owt's packed copy failed (the tensor does not pack)"), "{why}");
        decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap_err();
        assert_eq!(calls.counts(), [1, 1, 1, 1]);
        assert_eq!(decisions.lines(), vec![why]);
    }

    #[test]
    fn each_decline_is_said_as_it_happens() {
        static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let decisions: Decisions<u32> = Decisions::new(|line| SAID.lock().unwrap().push(line.to_string()));
        let calls = Fake { search_fails: AtomicUsize::new(1), ..Fake::finding(3) };
        let kept = Kept::default();
        let why = decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap_err();
        decisions.call(&calls, &kept, 0, KEY, &(), ()).unwrap_err();
        assert_eq!(*SAID.lock().unwrap(), vec![why]);
    }
}
