"""Op-level reconstruction of owt's dry-run cost log for alexnet-owt, weird trick, scheme b,
128 images per rank, priced as backend/src/analysis/cost_model.rs prices it (roofline per op, slowest
rank, comm = bytes/K/link + messages/K*latency per ledger label).  Returns per-phase lists."""
TF, MEM, LINK, LAT = 0.95e12, 192e9, 6e9, 10e-6   # gtx580-pcie preset
F4, I8 = 4, 8                                      # f32, i64 (Meta's index dtype)

def op(flops, rd, wr):                              # DeviceProfile::op_seconds
    return max(flops / TF, (rd + wr) / MEM)

def unary(n, sin=4, sout=4): return op(n, n*sin, n*sout)
def binary(n, n2=None, s=4): return op(n, (n + (n if n2 is None else n2))*s, n*s)
def reduction(nin, nout): return op(nin, nin*4, nout*4)
def mm(m, k, n): return op(2*m*k*n, (m*k + k*n)*4, m*n*4)
def cat(nelem): return op(0, nelem*4, nelem*4)

CONV = [  # name, Cin, Cout, k, in HxW, out HxW, pool after (out HxW)
    ("conv1", 3, 64, 11, 224, 55, 27),
    ("conv2", 64, 192, 5, 27, 27, 13),
    ("conv3", 192, 384, 3, 13, 13, None),
    ("conv4", 384, 256, 3, 13, 13, None),
    ("conv5", 256, 256, 3, 13, 13, 6),
]
FC = [("fc6", 9216, 4096, True), ("fc7", 4096, 4096, True), ("fc8", 4096, 1000, False)]  # dropout before
CONV_PARAMS = [c[1]*c[2]*c[3]**2 + c[2] for c in CONV]   # 23296, 307392, 663936, 884992, 590080
FC_PARAMS = [i*o + o for _, i, o, _ in FC]               # 37752832, 16781312, 4097000

def dropout_fwd(n):
    # CounterDropout::mask on [rows, cols] (i32 work): x.int() (f32->i64), cast i32, *0, +row_hash,
    # ^col, lowbias32 (3 shr = 6 unary, 3 xor, 2 mul_scalar), ^w1, lowbias32, >>8, &, lower_elem;
    # then bool_not, mask_fill, mul_scalar.
    lowbias = 6*unary(n) + 3*binary(n) + 2*unary(n)
    t = op(n, n*4, n*8) + op(n, n*8, n*4) + unary(n) + op(n, n*4 + 0, n*4) + op(n, n*4, n*4)
    t += 2*lowbias + unary(n) + unary(n) + unary(n) + op(n, n*4, n)
    t += op(n, n, n) + op(n, n*4 + n, n*4) + unary(n)
    return t

def dropout_bwd(n):  # mul_scalar backward, mask_fill backward
    return unary(n) + op(n, n*5, n*4)

def step(K, B=128):
    """Per-phase (compute_s, comm_s) for K ranks, B images per rank. Rank 0 (all ranks alike)."""
    ph = {}
    def add(label, c=0.0, m=0.0):
        a = ph.setdefault(label, [0.0, 0.0]); a[0] += c; a[1] += m
    ledger = []
    def comm(label, nbytes, msgs, kind="all_to_all", piece=0, rounds=1):   # DeviceProfile::comm_seconds
        add(label, 0.0, nbytes / K / LINK + msgs / K * LAT)
        ledger.append((label, kind, piece, rounds, msgs))
    N = B*K   # global batch
    # ---- conv trunk, forward (data parallel: B images per rank) ----
    for name, ci, co, k, hin, hout, pool in CONV:
        nin, nout = B*ci*hin*hin, B*co*hout*hout
        w = co*ci*k*k
        add(name+":forward", op(2*B*co*hout*hout*ci*k*k, (nin + w + co)*4, nout*4))      # conv2d
        add(name+":forward", unary(nout))                                                   # relu
        if pool:
            npool = B*co*pool*pool
            add(name+":forward", op(npool*9, nout*4, npool*(4+8)))                          # max_pool2d_with_indices
    nf = B*9216
    add("-:forward", reduction(nf, nf))                                                     # adaptive avg pool 6x6
    # ---- FC forward (weird trick, scheme b) ----
    for j, (name, din, dout, drop) in enumerate(FC):
        oc = dout // K
        if j == 0:   # input Shard(0) [N, 9216] rows exchanged: K rounds of one rank's B rows
            n_in = B*din
            if drop: add(name+":forward", dropout_fwd(n_in))
            for r in range(K):
                add(name+":forward", cat(B*din) + mm(B, din, oc))          # cat of 1 piece, round matmul
            add(name+":forward", cat(N*oc) + cat(N*din))                    # blocks cat, kept-whole cat
            comm(name+":forward", K*(K-1)*B*din*4, K*(K-1), "exchange", B*din*4, K)  # K rounds
        else:        # input Shard(1) [N, din]: contraction split, K rounds of one rank's columns
            ic = din // K
            n_in = N*ic
            if drop: add(name+":forward", dropout_fwd(n_in))
            for r in range(K):
                add(name+":forward", cat(N*ic) + cat(ic*oc) + mm(N, ic, oc))
            add(name+":forward", (K-1)*binary(N*oc) + cat(N*din))          # summands, kept-whole cat
            comm(name+":forward", K*(K-1)*N*ic*4, K*(K-1), "exchange", N*ic*4, K)
        add(name+":forward", binary(N*oc, oc))                              # + bias
        if j < 2: add(name+":forward", unary(N*oc))                         # relu6/7
    # ---- loss (logits Shard(1) [N, 1000/K]), a few small ops and the split-by-class traffic ----
    nl = N*(1000//K)
    add("loss:forward", 8*unary(nl) + 4*reduction(nl, N))
    add("loss:backward", 6*unary(nl))
    if K > 1:
        comm("loss:forward", 0, 3*K*(K-1) + 2*2*K*(K-1), "all_to_all", 0, 7)   # 3 all_gathers + 2 all_reduces (2 phases each)
        comm("loss:backward", 0, 1*K*(K-1) + 1*2*K*(K-1), "all_to_all", 0, 3)
    # ---- FC backward ----
    for j, (name, din, dout, drop) in reversed(list(enumerate(FC))):
        oc = dout // K
        L = name+":backward"
        add(L, reduction(N*oc, oc))                                         # bias grad
        add(L, mm(din, N, oc))                                              # dW = x^T dy (kept x)
        if j == 0:
            add(L, op(2*N*oc*din, (N*oc + oc*din)*4, N*din*4))              # dx Partial [N, 9216]
            add(L, unary(N*din))                                            # dropout6 mul_scalar on Partial
            add(L, (K-1)*binary(B*din))                                     # reduce_scatter sums
            comm(L, K*(K-1)*B*din*4, K*(K-1), "all_to_all", B*din*4, 1)   # reduce_scatter
            add(L, op(B*din, B*din*5, B*din*4))                             # mask_fill on Shard(0)
        else:
            ic = din // K
            add(L, op(2*N*oc*din, (N*oc + oc*din)*4, N*din*4))              # dx Partial [N, din]
            if FC[j][3]: add(L, unary(N*din))                               # dropout mul_scalar on Partial
            add(L, (K-1)*binary(N*ic))                                      # reduce_scatter sums
            comm(L, K*(K-1)*N*ic*4, K*(K-1), "all_to_all", N*ic*4, 1)
            if FC[j][3]: add(L, op(N*ic, N*ic*5, N*ic*4))                   # mask_fill
        # relu backward of the layer before (relu6 before fc7, relu7 before fc8): on the input side
        if j >= 1:
            add(L, binary(N*(din//K)))
    # ---- conv trunk backward ----
    add("-:backward", op(nf, nf*4, nf*4))                                   # adaptive avg pool backward
    for name, ci, co, k, hin, hout, pool in reversed(CONV):
        nin, nout = B*ci*hin*hin, B*co*hout*hout
        L = name+":backward"
        if pool:
            npool = B*co*pool*pool
            add(L, op(npool, npool*(4+8), nout*4))                          # max pool backward
        add(L, binary(nout))                                                # relu backward
        f = 2*B*co*hout*hout*ci*k*k
        w = co*ci*k*k
        if name != "conv1":
            add(L, op(f, (w + nout)*4, nin*4))                              # conv2d_x_backward
        add(L, op(f, (nin + nout)*4, w*4))                                  # conv2d_weight_backward
        add(L, reduction(nout, co))                                         # conv2d_bias_backward
    # ---- gradient sync: ring all-reduce of each conv weight and bias (Replicate params) ----
    if K > 1:
        for (name, ci, co, k, *_), p in zip(CONV, CONV_PARAMS):
            for n in (p - co, co):
                add(name+":sync", (K-1)*binary(n//K) + cat(n))
                comm(name+":sync", 2*(K-1)*n*4, 2*K*(K-1), "all_to_all", n//K*4, 2)  # reduce-scatter + all-gather of n/K slices
    # ---- SGD, momentum 0.9, weight decay 5e-4: 7 elementwise ops = 68 bytes per parameter ----
    # (wd: mul_scalar+add; momentum: mul_scalar(1-damp), mul_scalar(m), add; update: mul_scalar, sub)
    def sgd(n): return unary(n) + binary(n) + unary(n) + unary(n) + binary(n) + unary(n) + binary(n)
    add("-:update", sum(sgd(p) for p in CONV_PARAMS) + sum(sgd(p // K) for p in FC_PARAMS))
    return ph, ledger

def predict(K):
    ph, _ = step(K)
    c = sum(v[0] for v in ph.values()); m = sum(v[1] for v in ph.values())
    ov = sum(max(v) for v in ph.values())
    return c, m, c + m, ov, ph
