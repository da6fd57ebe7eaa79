//! The buffers owt-hybrid hands NCCL (`owt_hybrid::nccl::buffer`), checked against CubeCL's
//! CUDA allocator for every parameter of the AlexNet family and, on a wgpu device, for their
//! values: here because the check needs both the models and a CubeCL runtime, which only the
//! crate that composes them has (the CUDA allocator's arithmetic runs without a GPU).
use burn::tensor::{DType, Shape};
use cubecl_common::stream_id::StreamId;
use cubecl_runtime::allocator::PitchedMemoryLayoutPolicy;
use cubecl_runtime::server::MemoryLayoutDescriptor;
use cubecl_runtime::server::{MemoryLayout, MemoryLayoutPolicy};
use owt_hybrid::nccl::buffer::{copy_descriptor, count_in, nccl_buffers, NcclBuffer};
use owt_models::{ModelKind, ModelSpec};

/// cubecl-cuda 0.10.0's memory alignment (`runtime.rs`, `mem_alignment = 512`).
const CUDA_ALIGNMENT: usize = 512;

/// What CubeCL's CUDA runtime allocates for one descriptor.
fn on_cuda(descriptor: MemoryLayoutDescriptor) -> MemoryLayout {
    PitchedMemoryLayoutPolicy::new(CUDA_ALIGNMENT).apply(StreamId::current(), &[descriptor]).1.remove(0)
}

/// One past the furthest element a layout's strides reach, in elements.
fn reach(shape: &[usize], strides: &[usize]) -> usize {
    shape.iter().zip(strides).map(|(&n, &s)| (n - 1) * s).sum::<usize>() + 1
}

/// Every parameter shape of the AlexNet family at its full input.
fn alexnet_parameters() -> Vec<(String, Vec<usize>)> {
    [ModelKind::AlexNet2012, ModelKind::AlexNetOwt, ModelKind::AlexNetSmall]
        .into_iter()
        .flat_map(|kind| {
            let arch = ModelSpec::new(kind).architecture().unwrap();
            arch.parameters().unwrap().into_iter().map(move |(p, s)| (format!("{} {p}", arch.name), s))
        })
        .collect()
}

#[test]
fn the_count_covers_every_element_of_the_buffer_nccl_is_given() {
    let params = alexnet_parameters();
    // Conv weights' rows of 11, 5 and 3; biases are one row each.
    let rows: std::collections::BTreeSet<usize> =
        params.iter().filter(|(_, s)| s.len() > 1).map(|(_, s)| *s.last().unwrap()).collect();
    for row in [11, 5, 3] {
        assert!(rows.contains(&row), "rows of {row} among {rows:?}");
    }
    assert!(params.iter().filter(|(_, s)| s.len() == 1).count() >= 8, "biases");
    let mut padded = 0;
    for (name, shape) in &params {
        let elements: usize = shape.iter().product();
        // The parameter's own buffer, as CubeCL lays it out on CUDA: a count of its shape's
        // elements falls short of the elements its strides reach whenever rows are padded.
        let own = on_cuda(MemoryLayoutDescriptor::optimized(Shape::from(shape.clone()), 4));
        let own_count = count_in(own.memory.size_in_used(), DType::F32);
        let own_reach = reach(shape, &own.strides);
        assert!(own_count >= own_reach, "{name}: the buffer holds what its strides reach");
        if own_reach > elements {
            padded += 1;
        }
        // The copy NCCL sums: exactly the elements, and the count from its buffer is theirs.
        let copy = on_cuda(copy_descriptor(&Shape::from(shape.clone()), DType::F32));
        let count = count_in(copy.memory.size_in_used(), DType::F32);
        assert_eq!(count * 4, copy.memory.size_in_used() as usize, "{name}");
        assert_eq!(count, elements, "{name} {shape:?}");
        assert_eq!(reach(shape, &copy.strides), elements, "{name}: the copy is contiguous");
    }
    // Every conv weight (rows of 11, 5, 3) is padded on CUDA: the bug a count of
    // `num_elements` had in owt-hybrid's NCCL world.
    let conv_weights = params.iter().filter(|(_, s)| s.len() == 4 && s[3] > 1).count();
    assert!(conv_weights >= 10 && padded >= conv_weights, "{padded} padded of {conv_weights} conv weights");
    // Another element size counts its own elements.
    let half = on_cuda(copy_descriptor(&Shape::from(vec![64, 3, 11, 11]), DType::BF16));
    assert_eq!(count_in(half.memory.size_in_used(), DType::BF16), 64 * 3 * 11 * 11);
}

#[test]
#[should_panic(expected = "not a whole number")]
fn a_buffer_of_another_dtype_is_refused() {
    count_in(6, DType::F32);
}

#[test]
fn copies_hold_the_pieces_values_contiguously() {
    use burn::backend::wgpu::WgpuDevice;
    use burn::tensor::Tensor;
    if crate::runtime::kernel_cache::wgpu_adapters().is_empty() {
        eprintln!("no wgpu adapter: skipped");
        return;
    }
    type Plain = crate::runtime::backends::wgpu_backend::Plain;
    let device = WgpuDevice::default();
    let values: Vec<f32> = (0..64 * 3 * 11 * 11).map(|i| i as f32 * 0.5 - 7.0).collect();
    let t = Tensor::<Plain, 1>::from_floats(values.as_slice(), &device).reshape([64, 3, 11, 11]);
    // A strided view (the transpose of the last two dims) and the tensor itself.
    for piece in [t.clone().swap_dims(2, 3), t.clone()] {
        let expected = piece.to_data();
        let copies = nccl_buffers(vec![piece.into_primitive().tensor()]);
        let NcclBuffer { tensor, count } = copies.into_iter().next().unwrap();
        assert_eq!(count, 64 * 3 * 11 * 11);
        assert!(tensor.is_contiguous());
        let got = Tensor::<Plain, 4>::from_primitive(burn::tensor::TensorPrimitive::Float(tensor)).to_data();
        assert_eq!(got, expected);
    }
}
