//! The allocator the `spool` binary runs with, and how it gives memory back.
//!
//! mimalloc instead of glibc's malloc: under many concurrent requests
//! glibc's arenas spent ~30% of the server's CPU in malloc, free and chunk
//! consolidation (profile in docs/BENCHMARKS.md).
//!
//! mimalloc returns freed pages to the system only after a delay, and only
//! when the thread that owns them allocates or frees again. The engine's
//! core thread goes quiet once a queue drains, so a drained store kept tens
//! of MiB of freed pages resident for good (a million tasks drained: 4–21
//! MiB kept, varying run to run). With the delay at zero a page is returned
//! when it is freed; `spool bench` measured no difference in throughput.
//!
//! Tests and examples that measure memory include this file, so their
//! figures are the binary's.

/// The allocator of every thread of the process.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its position in `mi_option_e` of
/// mimalloc.h, 15 in both major versions; libmimalloc-sys names no
/// constant for it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Makes freed memory go back to the system at once. Call it first thing
/// in `main`.
pub(crate) fn return_freed_memory_at_once() {
    // SAFETY: sets one integer option; mimalloc reads its options with
    // atomic loads, so setting one while other threads allocate is sound.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, 0);
    }
}
