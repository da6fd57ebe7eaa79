//! Why the processes of a CUDA job might not join one NCCL communicator, decided without a
//! GPU (so it is tested everywhere): NCCL puts at most one rank on a GPU, and GPUs are told
//! apart across processes by host and PCI address.

/// Why a job's processes did not join one NCCL communicator (the job then sums gradients
/// across processes through MPI on the host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinRefusal {
    /// Two ranks would sit on one GPU, which NCCL refuses (several processes on a node with
    /// fewer GPUs than ranks).
    SharedGpu {
        /// The GPU, as host and PCI address.
        gpu: String,
        /// The two global ranks on it.
        ranks: (usize, usize),
    },
    /// CUDA or NCCL failed while joining.
    Failed(String),
}

impl std::fmt::Display for JoinRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JoinRefusal::SharedGpu { gpu, ranks } => {
                write!(f, "ranks {} and {} share GPU {gpu}, and NCCL puts at most one rank on a GPU", ranks.0, ranks.1)
            }
            JoinRefusal::Failed(why) => write!(f, "NCCL across processes did not start: {why}"),
        }
    }
}

/// The first pair of ranks whose GPUs are the same, from every rank's GPU identity in rank
/// order.
pub fn shared_gpu(identities: &[String]) -> Option<JoinRefusal> {
    for (b, id) in identities.iter().enumerate() {
        if let Some(a) = identities[..b].iter().position(|other| other == id) {
            return Some(JoinRefusal::SharedGpu { gpu: id.clone(), ranks: (a, b) });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_ranks_on_one_gpu_are_named() {
        let ids: Vec<String> = ["n1/0000:19:00", "n1/0000:3b:00", "n2/0000:19:00", "n1/0000:19:00"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(shared_gpu(&ids), Some(JoinRefusal::SharedGpu { gpu: "n1/0000:19:00".into(), ranks: (0, 3) }));
        assert_eq!(shared_gpu(&ids[..3]), None, "the same PCI address on another host is another GPU");
    }
}
