"""Makes the strided weight files of tests/fixtures/torchvision from the state dict already there
(alexnet.pth), so their values are that file's values bit for bit whatever torch version runs
this:

- alexnet_transposed.pth: every Linear weight stored transposed (`w.t().contiguous().t()`: the
  same values, strides (1, rows)), and every bias a view into a larger storage (a storage offset,
  as a slice of a bigger tensor saves);
- alexnet_channels_last.pth: every conv weight in channels-last memory (what a model trained
  with `memory_format=torch.channels_last` saves).

PyTorch reads both to alexnet.pth's values (checked below); owt must too
(models/tests/models/torchvision.rs).

Run once: python3 scripts/make_strided_weights_fixture.py (needs torch).
"""

import pathlib

import torch

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "torchvision"


def offset_view(t):
    """`t`'s values as a view 3 elements into a larger storage."""
    big = torch.cat([torch.full((3,), 7.0, dtype=t.dtype), t.flatten(), torch.full((5,), -7.0, dtype=t.dtype)])
    return big[3 : 3 + t.numel()].view(t.shape)


def main():
    state = torch.load(OUT / "alexnet.pth")
    transposed = {}
    for k, v in state.items():
        if v.dim() == 2:
            transposed[k] = v.t().contiguous().t()
            assert transposed[k].stride() == (1, v.shape[0]), transposed[k].stride()
        elif v.dim() == 1:
            transposed[k] = offset_view(v)
            assert transposed[k].storage_offset() == 3
        else:
            transposed[k] = v
    channels_last = {k: v.contiguous(memory_format=torch.channels_last) if v.dim() == 4 else v for k, v in state.items()}
    assert any(not v.is_contiguous() for v in channels_last.values())
    torch.save(transposed, OUT / "alexnet_transposed.pth")
    torch.save(channels_last, OUT / "alexnet_channels_last.pth")
    for name in ["alexnet_transposed.pth", "alexnet_channels_last.pth"]:
        back = torch.load(OUT / name)
        assert all(torch.equal(back[k], state[k]) for k in state), name
    print("wrote alexnet_transposed.pth and alexnet_channels_last.pth")


if __name__ == "__main__":
    main()
