//! The input pipeline: batches prepared ahead on a thread are the batches a plain loop makes;
//! pixels uploaded as bytes and normalised on the device equal the host's normalisation; on a
//! mesh each rank receives only its own shard (and nothing crosses ranks); running sums kept
//! on the device read back as the host sums.

use std::sync::Arc;

use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use owt::data::{synthetic_images, Batch, ImageSource};
use owt::train::input::{bytes_on_device, upload_images, Prefetch, Preparation, Tally};
use owt::train::upload_batch;
use owt_hybrid::prelude::*;
use owt_hybrid::PlanKind;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};
use owt_hybrid::{Exchange, MeshLayout, SingleDevice};
use owt_models::PixelNorm;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// Random flips on, so the order of random draws matters.
fn source() -> Arc<dyn ImageSource> {
    let base = synthetic_images([1, 6, 5], 4, 23, 9);
    let dims = base.image_dims();
    let mut rng = StdRng::seed_from_u64(0);
    let all: Vec<usize> = (0..base.len()).collect();
    let b = base.batch(&all, false, &mut rng);
    let labels = b.labels.iter().map(|&l| l as u8).collect();
    Arc::new(owt::data::InMemoryImages::new(dims, 4, b.images, labels, true))
}

#[test]
fn prefetched_batches_are_the_batches_of_a_plain_loop() {
    let source = source();
    let mut order: Vec<usize> = (0..source.len()).collect();
    order.shuffle(&mut StdRng::seed_from_u64(4));
    // Each image's crops and flips from its own generator: the epoch's base draw and its
    // position in the order.
    let base = rand::RngCore::next_u64(&mut StdRng::seed_from_u64(5));
    let plain: Vec<Batch> = order
        .chunks(5)
        .enumerate()
        .map(|(k, c)| {
            let parts = (0..c.len())
                .map(|j| source.batch(&c[j..j + 1], true, &mut owt::train::input::image_rng(base, k * 5 + j)))
                .collect();
            Batch::rows_of(parts, 0..c.len(), c.len(), source.image_dims())
        })
        .collect();
    for workers in [1, 2, 3] {
        let how = Preparation::new(workers, 2);
        let mut prefetch = Prefetch::start(source.clone(), order.clone(), 5, true, StdRng::seed_from_u64(5), how);
        let mut got = Vec::new();
        while let Some(b) = prefetch.next_batch().unwrap() {
            got.push(b);
        }
        assert_eq!(got.len(), 5, "23 images in batches of 5");
        assert_eq!(got, plain, "{workers} workers");
    }
    // Stopping early does not hang.
    let mut early =
        Prefetch::start(source.clone(), (0..23).collect(), 1, true, StdRng::seed_from_u64(1), Preparation::new(2, 1));
    assert!(early.next_batch().unwrap().is_some());
    drop(early);
}

/// A source whose images cannot be prepared.
struct Broken;

impl ImageSource for Broken {
    fn len(&self) -> usize {
        4
    }
    fn image_dims(&self) -> [usize; 3] {
        [1, 2, 2]
    }
    fn classes(&self) -> usize {
        2
    }
    fn batch(&self, _: &[usize], _: bool, _: &mut dyn rand::RngCore) -> Batch {
        panic!("image 3 is unreadable")
    }
}

#[test]
fn a_batch_that_cannot_be_prepared_is_an_error_not_a_short_epoch() {
    let mut prefetch =
        Prefetch::start(Arc::new(Broken), vec![0, 1, 2, 3], 2, false, StdRng::seed_from_u64(0), Preparation::new(2, 2));
    let e = prefetch.next_batch().unwrap_err().to_string();
    assert!(e.contains("preparing a batch failed") && e.contains("image 3 is unreadable"), "{e}");
}

#[test]
fn bytes_normalised_on_the_device_equal_the_host_normalisation() {
    let device = Default::default();
    assert!(bytes_on_device::<Flex>(&device), "Flex holds byte tensors");
    let mut rng = StdRng::seed_from_u64(0);
    let batch = source().batch(&[0, 1, 2], false, &mut rng);
    let on_device = upload_images::<Flex>(&batch, &device, &PixelNorm::Symmetric).into_data().to_vec::<f32>().unwrap();
    let on_host = batch.normalised_data(&PixelNorm::Symmetric).to_vec::<f32>().unwrap();
    assert_eq!(on_device, on_host);
    let (images, labels) = upload_batch(&SingleDevice::<Autodiff<Flex>>::new(device), &batch, &PixelNorm::Symmetric);
    assert_eq!(images.into_data().to_vec::<f32>().unwrap(), on_host);
    assert_eq!(labels.into_data().convert::<i64>().to_vec::<i64>().unwrap(), batch.labels);
}

#[test]
fn each_rank_receives_only_its_own_shard() {
    let mut rng = StdRng::seed_from_u64(0);
    let batch = source().batch(&(0..10).collect::<Vec<_>>(), false, &mut rng);
    let want = batch.normalised_data(&PixelNorm::Symmetric).to_vec::<f32>().unwrap();
    for k in [2, 3, 4] {
        let layout = MeshLayout::<Flex>::new(
            MeshDevice::virtual_ranks(Default::default(), k),
            PlanKind::WeirdTrick.plan(),
            Exchange::AllGather,
        );
        let (images, labels) = upload_batch(&layout, &batch, &PixelNorm::Symmetric);
        assert_eq!(images.placement(), Placement::Shard(0), "K={k}");
        assert_eq!(labels.placement(), Placement::Shard(0), "K={k}");
        let rows: Vec<usize> = images.local_shapes().iter().map(|s| s[0]).collect();
        assert_eq!(rows, owt_hybrid::shard_sizes(10, k));
        // The upload itself moved nothing between ranks.
        assert_eq!(layout.traffic().unwrap().total().bytes, 0, "K={k}");
        let inner = images.inner();
        let prim = inner.clone().into_primitive().tensor();
        let mut offset = 0;
        for (r, shard) in prim.shards().iter().enumerate() {
            let local = Tensor::<Flex, 4>::from_primitive(burn::tensor::TensorPrimitive::Float(shard.clone()));
            let n = local.dims()[0] * 30;
            assert_eq!(local.into_data().to_vec::<f32>().unwrap(), want[offset..offset + n], "K={k} rank {r}");
            offset += n;
        }
        assert_eq!(inner.into_data().to_vec::<f32>().unwrap(), want);
        assert_eq!(labels.into_data().convert::<i64>().to_vec::<i64>().unwrap(), batch.labels);
    }
}

#[test]
fn device_tallies_read_back_the_host_sums() {
    let device = Default::default();
    let mut tally = Tally::<Flex>::default();
    let (mut loss_sum, mut correct_sum) = (0.0, 0);
    for (loss, correct, n) in [(2.5f32, 3i64, 4usize), (1.25, 1, 2), (0.5, 5, 8)] {
        tally.add(Tensor::from_data([loss], &device), Tensor::from_data([correct], &device), n);
        loss_sum += loss as f64 * n as f64;
        correct_sum += correct as usize;
    }
    let v = tally.read();
    assert_eq!((v.loss_sum, v.correct, v.images), (loss_sum, correct_sum, 14));
    assert!((v.mean_loss() - loss_sum / 14.0).abs() < 1e-12 && v.accuracy() == 9.0 / 14.0);
    // On a mesh the sums stay pending (Partial) until read, then all-reduce once.
    let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
    let mut tally = Tally::<Hybrid<Flex>>::default();
    let x = Tensor::<Hybrid<Flex>, 1>::from_data([1.0f32, 2.0, 3.0, 4.0], &mesh).distribute(Placement::Shard(0));
    let hits = Tensor::<Hybrid<Flex>, 1, Int>::from_data([1, 0, 1, 1], &mesh).distribute(Placement::Shard(0));
    for _ in 0..3 {
        tally.add(x.clone().sum().div_scalar(4.0), hits.clone().sum(), 4);
    }
    mesh.reset_ledger();
    let v = tally.read();
    assert_eq!((v.loss_sum, v.correct, v.images), (30.0, 9, 12));
    assert_eq!(mesh.ledger_snapshot().by_collective("all_reduce").messages, 4, "two one-number all-reduces at K=2");
}

/// A source that records every image it is asked for.
struct Counting {
    inner: Arc<dyn ImageSource>,
    asked: std::sync::Mutex<Vec<usize>>,
}

impl ImageSource for Counting {
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn image_dims(&self) -> [usize; 3] {
        self.inner.image_dims()
    }
    fn classes(&self) -> usize {
        self.inner.classes()
    }
    fn batch(&self, indices: &[usize], augment: bool, rng: &mut dyn rand::RngCore) -> Batch {
        self.asked.lock().unwrap().extend_from_slice(indices);
        self.inner.batch(indices, augment, rng)
    }
}

#[test]
fn each_process_of_a_job_reads_only_its_ranks_rows_and_together_they_are_the_whole_batches() {
    let mut order: Vec<usize> = (0..23).collect();
    order.shuffle(&mut StdRng::seed_from_u64(2));
    let drain = |mut p: Prefetch| std::iter::from_fn(move || p.next_batch().unwrap()).collect::<Vec<Batch>>();
    let whole =
        drain(Prefetch::start(source(), order.clone(), 8, true, StdRng::seed_from_u64(3), Preparation::one_thread(2)));
    // Two processes of two ranks: 4 ranks, batches of 8 (rows 4 + 4), 8 and the last 7 (rows 4 + 3).
    let parts = owt_hybrid::ThreadedGroup::run(2, |group| {
        let mesh: MeshDevice<burn::backend::flex::FlexDevice> =
            MeshDevice::spanning(vec![Default::default(); 2], owt_hybrid::Transport::HostStaged, Arc::new(group))
                .unwrap();
        let counting = Arc::new(Counting { inner: source(), asked: Default::default() });
        let split = owt_hybrid::RowSplit::of(&mesh, Placement::Shard(0));
        let batches = drain(Prefetch::start_rows(
            counting.clone(),
            order.clone(),
            8,
            true,
            StdRng::seed_from_u64(3),
            Preparation::one_thread(2),
            split,
        ));
        let asked = counting.asked.lock().unwrap().clone();
        (batches, asked)
    });
    let (first, second) = (&parts[0], &parts[1]);
    assert_eq!(first.0.iter().map(|b| b.rows.clone()).collect::<Vec<_>>(), vec![0..4, 0..4, 0..4]);
    assert_eq!(second.0.iter().map(|b| b.rows.clone()).collect::<Vec<_>>(), vec![4..8, 4..8, 4..7]);
    for (k, w) in whole.iter().enumerate() {
        let (a, b) = (&first.0[k], &second.0[k]);
        assert_eq!((a.total_len(), b.total_len()), (w.len(), w.len()));
        assert_eq!(
            [a.images.clone(), b.images.clone()].concat(),
            w.images,
            "batch {k}: the same pixels, flips included"
        );
        assert_eq!([a.labels.clone(), b.labels.clone()].concat(), w.labels);
    }
    // Each process asked the source for its rows' images only, and between them for all.
    let want = |rows: fn(usize) -> std::ops::Range<usize>| -> Vec<usize> {
        order.chunks(8).flat_map(|c| c[rows(c.len())].to_vec()).collect()
    };
    assert_eq!(first.1, want(|_| 0..4));
    assert_eq!(second.1, want(|n| 4..n));
}

/// ImageNet's mean and std, as torchvision computes them (`ToTensor` then `Normalize`), on the
/// device and on the host alike, and on a mesh without moving a byte between ranks.
#[test]
fn imagenet_normalisation_on_the_device_equals_the_host_and_torchvisions_arithmetic() {
    let device = Default::default();
    let source = synthetic_images([3, 4, 5], 2, 6, 1);
    let batch = source.batch(&[0, 1, 2, 3, 4, 5], false, &mut StdRng::seed_from_u64(0));
    let norm = PixelNorm::IMAGENET;
    let on_host = batch.normalised_data(&norm).to_vec::<f32>().unwrap();
    // By hand, channel by channel: (x / 255 - mean) / std in f32.
    let (mean, std) = ([0.485f32, 0.456, 0.406], [0.229f32, 0.224, 0.225]);
    let want: Vec<f32> = batch
        .images
        .iter()
        .enumerate()
        .map(|(i, &x)| (x as f32 / 255.0 - mean[(i / 20) % 3]) / std[(i / 20) % 3])
        .collect();
    assert_eq!(on_host, want);
    assert_eq!(upload_images::<Flex>(&batch, &device, &norm).into_data().to_vec::<f32>().unwrap(), want);
    assert_ne!(batch.normalised_data(&PixelNorm::Symmetric).to_vec::<f32>().unwrap(), want);
    let layout = MeshLayout::<Flex>::new(
        MeshDevice::virtual_ranks(Default::default(), 2),
        PlanKind::DataParallel.plan(),
        Exchange::AllGather,
    );
    let (images, _) = upload_batch(&layout, &batch, &norm);
    assert_eq!(images.placement(), Placement::Shard(0));
    assert_eq!(layout.traffic().unwrap().total().bytes, 0, "the mean and std are replicated, the shards stay");
    assert_eq!(images.inner().into_data().to_vec::<f32>().unwrap(), want);
}
