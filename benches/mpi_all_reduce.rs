//! The time of an all-reduce across processes through owt's collectives (MPI, host-staged):
//! a 4-byte and a 64 MB f32 tensor pending a sum on every rank, brought to `Replicate`, over
//! loopback. Run under mpirun, one rank per process:
//!
//! ```sh
//! cargo build --locked --features mpi --benches
//! mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,tcp --mca btl_tcp_if_include lo \
//!     --mca oob_tcp_if_include lo target/debug/deps/mpi_all_reduce-* --bench
//! ```
//!
//! Process 0 prints the median of the repetitions and the bytes the ledger counted.

use std::sync::Arc;
use std::time::Instant;

use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use owt_hybrid::{partial_from_summands, Distributed, MeshDevice, MpiGroup, Placement, ProcessGroup, Transport};

fn main() {
    let group = Arc::new(MpiGroup::join(std::time::Duration::from_secs(120)).expect("MPI starts"));
    let mesh = MeshDevice::spanning(vec![FlexDevice], Transport::HostStaged, group.clone()).expect("a mesh");
    let k = mesh.size();
    for (label, elements, reps) in [("4 B", 1usize, 200usize), ("64 MB", 16 << 20, 5)] {
        let summands: Vec<burn::tensor::TensorData> =
            (0..k).map(|r| burn::tensor::TensorData::new(vec![r as f32 + 1.0; elements], [elements])).collect();
        let mut times = Vec::new();
        mesh.reset_ledger();
        let sent_before = group.bytes_sent();
        for _ in 0..reps {
            let t = partial_from_summands::<Flex, 1>(summands.clone(), &mesh);
            let start = Instant::now();
            let whole = t.distribute(Placement::Replicate);
            let _ = whole.slice([0..1]).into_data();
            times.push(start.elapsed().as_secs_f64());
        }
        let mpi_bytes = (group.bytes_sent() - sent_before) / reps as u64;
        let ledger = mesh.job_ledger_snapshot().total();
        times.sort_by(f64::total_cmp);
        if group.rank() == 0 {
            println!(
                "all-reduce of {label} ({elements} f32) over {k} processes: median {:.3} ms (min {:.3}); a time: {} bytes in the job's ledger ({} across processes), process 0 handed MPI {} bytes",
                1e3 * times[times.len() / 2],
                1e3 * times[0],
                ledger.bytes / reps as u64,
                ledger.cross_process_bytes / reps as u64,
                mpi_bytes
            );
        }
    }
    group.finish();
}
