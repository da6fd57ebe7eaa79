//! A Burn matmul (`lhs [.., m, k] x rhs [.., k, n]`, row-major logical order, any strides) in
//! cuBLASLt's terms. cuBLASLt is column-major: a row-major `C = A B` is the column-major
//! `C^T = B^T A^T`, and a row-major matrix with row stride `ld` read column-major is its
//! transpose with leading dimension `ld`. So cuBLASLt's first operand is `rhs`, its second
//! `lhs`, its output `out^T`; an operand whose columns (not rows) are contiguous, as the
//! transposed weight of a Linear's backward pass, is described as stored and marked transposed
//! instead of being copied. Batch dimensions collapse into one strided batch where their
//! strides allow; a side whose batch dimensions are all 1 is broadcast with batch stride 0.
//! Pure arithmetic, tested against a host GEMM that reads memory as cuBLASLt would.

use super::super::cudnn::Unsupported;

/// One operand or the output as cuBLASLt's matrix layout describes it (column-major).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matrix {
    /// Rows of the stored column-major matrix.
    pub rows: u64,
    /// Columns of the stored column-major matrix.
    pub cols: u64,
    /// Elements between the starts of neighbouring columns.
    pub ld: i64,
    /// Whether the GEMM reads the stored matrix transposed (`CUBLAS_OP_T`).
    pub transposed: bool,
    /// Elements between neighbouring matrices of the batch (0: one matrix for every batch).
    pub batch_stride: i64,
}

/// A matmul as one strided-batched column-major GEMM `D = op(A) op(B)`, `D` being `out^T`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gemm {
    /// cuBLASLt's `A`: the row-major `rhs`.
    pub a: Matrix,
    /// cuBLASLt's `B`: the row-major `lhs`.
    pub b: Matrix,
    /// cuBLASLt's `D` (and `C`): the row-major output, packed.
    pub d: Matrix,
    /// Matrices in the batch.
    pub batch: u64,
    /// The output's dims (Burn's order: batch dims, `m`, `n`).
    pub out_dims: Vec<usize>,
}

/// How a row-major logical matrix of `rows x cols` with strides `(row_stride, col_stride)` is
/// stored: column-major rows x cols read transposed, or column-major cols x rows as it is.
/// Returns (stored rows, stored cols, ld, transposed-from-the-logical-view) for the logical
/// matrix's transpose, which is what the column-major GEMM reads.
fn stored(rows: usize, cols: usize, row_stride: usize, col_stride: usize) -> Option<(u64, u64, i64, bool)> {
    // Lengths of 1 address nothing along their dim: any stride will do.
    let row_stride = if rows == 1 { cols.max(1) } else { row_stride };
    let col_stride = if cols == 1 { 1 } else { col_stride };
    if col_stride == 1 && row_stride >= cols.max(1) {
        // Row-major: its transpose is column-major cols x rows, ld = row stride.
        Some((cols as u64, rows as u64, row_stride as i64, false))
    } else if row_stride == 1 && col_stride >= rows.max(1) {
        // Column-major: stored rows x cols (ld = col stride), the GEMM reads it transposed.
        Some((rows as u64, cols as u64, col_stride as i64, true))
    } else {
        None
    }
}

/// The one stride of batch dims `dims` with `strides` taken as a single dimension, or `None`
/// where they do not collapse (a padded or permuted batch). All-1 dims give 0 (broadcast).
fn batch_stride(dims: &[usize], strides: &[usize]) -> Option<i64> {
    let kept: Vec<(usize, usize)> = dims.iter().zip(strides).filter(|(d, _)| **d != 1).map(|(d, s)| (*d, *s)).collect();
    let Some(&(_, innermost)) = kept.last() else { return Some(0) };
    for pair in kept.windows(2) {
        if pair[0].1 != pair[1].1 * pair[1].0 {
            return None;
        }
    }
    Some(innermost as i64)
}

/// The GEMM of `lhs` (dims, strides) times `rhs` (dims, strides), or why cuBLASLt is not given
/// it: ranks below 2 or unequal, inner dims that differ, batch dims that neither match nor are
/// all 1 on one side, an operand with neither its rows nor its columns contiguous, a batch that
/// does not collapse into one stride, a size past cuBLASLt's 32-bit counts, an empty product.
pub fn gemm(lhs: (&[usize], &[usize]), rhs: (&[usize], &[usize])) -> Result<Gemm, Unsupported> {
    let (ld, ls) = lhs;
    let (rd, rs) = rhs;
    let rank = ld.len();
    if rank < 2 || rd.len() != rank || ls.len() != rank || rs.len() != rank {
        return Err(Unsupported(format!("matmul of ranks {} and {}", ld.len(), rd.len())));
    }
    let (m, k, k2, n) = (ld[rank - 2], ld[rank - 1], rd[rank - 2], rd[rank - 1]);
    if k != k2 {
        return Err(Unsupported(format!("inner dims {k} and {k2} differ")));
    }
    if m == 0 || n == 0 || k == 0 {
        return Err(Unsupported("an empty matmul".into()));
    }
    let (lb, rb) = (&ld[..rank - 2], &rd[..rank - 2]);
    let lhs_one = lb.iter().all(|&d| d == 1);
    let rhs_one = rb.iter().all(|&d| d == 1);
    let batch_dims: Vec<usize> = if lb == rb || rhs_one {
        lb.to_vec()
    } else if lhs_one {
        rb.to_vec()
    } else {
        return Err(Unsupported(format!("batch dims {lb:?} and {rb:?} broadcast partly")));
    };
    let batch: usize = batch_dims.iter().product();
    let side =
        |what: &str, rows: usize, cols: usize, dims: &[usize], strides: &[usize]| -> Result<Matrix, Unsupported> {
            let (r, c) = (strides[rank - 2], strides[rank - 1]);
            let (srows, scols, ld, transposed) = stored(rows, cols, r, c).ok_or_else(|| {
                Unsupported(format!("{what} strides {strides:?} have neither rows nor columns contiguous"))
            })?;
            let batch_stride = batch_stride(&dims[..rank - 2], &strides[..rank - 2])
                .ok_or_else(|| Unsupported(format!("{what} batch strides {strides:?} do not collapse")))?;
            Ok(Matrix { rows: srows, cols: scols, ld, transposed, batch_stride })
        };
    let a = side("rhs", k, n, rd, rs)?;
    let b = side("lhs", m, k, ld, ls)?;
    let d = Matrix { rows: n as u64, cols: m as u64, ld: n as i64, transposed: false, batch_stride: (m * n) as i64 };
    let limit = i32::MAX as u64;
    let furthest = |x: &Matrix| x.ld as u64 * x.cols + x.batch_stride as u64 * (batch as u64);
    if [m, n, k, batch].iter().any(|&v| v as u64 > limit) || [&a, &b, &d].iter().any(|x| furthest(x) > u64::MAX / 4) {
        return Err(Unsupported(format!("matmul sizes past cuBLASLt's counts ({m} x {k} x {n}, batch {batch})")));
    }
    let mut out_dims = batch_dims;
    out_dims.extend([m, n]);
    Ok(Gemm { a, b, d, batch: batch as u64, out_dims })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Element `(i, j)` of stored column-major matrix `x` at batch `t` of `mem`, read as the
    /// GEMM reads it (`op(X)` at `(i, j)`).
    fn op_at(mem: &[f64], x: &Matrix, t: usize, i: usize, j: usize) -> f64 {
        let (r, c) = if x.transposed { (j, i) } else { (i, j) };
        mem[t * x.batch_stride as usize + c * x.ld as usize + r]
    }

    /// The column-major GEMM `D = op(A) op(B)` on host memory, as cuBLASLt runs it.
    fn host_gemm(g: &Gemm, a: &[f64], b: &[f64], n: usize, m: usize, k: usize) -> Vec<f64> {
        let mut d = vec![0.0; g.batch as usize * g.d.batch_stride as usize];
        for t in 0..g.batch as usize {
            for i in 0..n {
                for j in 0..m {
                    let s: f64 = (0..k).map(|p| op_at(a, &g.a, t, i, p) * op_at(b, &g.b, t, p, j)).sum();
                    d[t * g.d.batch_stride as usize + j * g.d.ld as usize + i] = s;
                }
            }
        }
        d
    }

    /// A strided tensor of `dims` in memory: element `idx` at `sum(idx * strides)`, value from
    /// its logical index; padding holds NaN, so a read of it shows.
    fn lay_out(dims: &[usize], strides: &[usize], value: impl Fn(&[usize]) -> f64) -> Vec<f64> {
        let span = dims.iter().zip(strides).map(|(d, s)| (d - 1) * s).sum::<usize>() + 1;
        let mut mem = vec![f64::NAN; span];
        let total: usize = dims.iter().product();
        for flat in 0..total {
            let mut idx = vec![0; dims.len()];
            let mut rest = flat;
            for d in (0..dims.len()).rev() {
                idx[d] = rest % dims[d];
                rest /= dims[d];
            }
            let at: usize = idx.iter().zip(strides).map(|(i, s)| i * s).sum();
            mem[at] = value(&idx);
        }
        mem
    }

    fn check(lhs: (&[usize], &[usize]), rhs: (&[usize], &[usize])) {
        let g = gemm(lhs, rhs).unwrap();
        let rank = lhs.0.len();
        let (m, k, n) = (lhs.0[rank - 2], lhs.0[rank - 1], rhs.0[rank - 1]);
        // The layouts' own shapes as cuBLASLt checks them: op(A) is n x k, op(B) k x m, D n x m,
        // each leading dimension at least its stored rows.
        let op_dims = |x: &Matrix| if x.transposed { (x.cols, x.rows) } else { (x.rows, x.cols) };
        assert_eq!(op_dims(&g.a), (n as u64, k as u64), "A of {lhs:?} x {rhs:?}: {:?}", g.a);
        assert_eq!(op_dims(&g.b), (k as u64, m as u64), "B of {lhs:?} x {rhs:?}: {:?}", g.b);
        assert_eq!((g.d.rows, g.d.cols, g.d.transposed), (n as u64, m as u64, false));
        for x in [&g.a, &g.b, &g.d] {
            assert!(x.ld as u64 >= x.rows, "{x:?}");
        }
        let lv = |i: &[usize]| (i.iter().enumerate().map(|(d, v)| (d + 1) * 7 * v).sum::<usize>() % 13) as f64 - 6.0;
        let rv = |i: &[usize]| (i.iter().enumerate().map(|(d, v)| (d + 2) * 5 * v).sum::<usize>() % 11) as f64 - 5.0;
        let (a, b) = (lay_out(rhs.0, rhs.1, rv), lay_out(lhs.0, lhs.1, lv));
        let d = host_gemm(&g, &a, &b, n, m, k);
        // The reference: a row-major matmul of the logical tensors, batch by batch.
        let batch = g.batch as usize;
        let bdims = &g.out_dims[..rank - 2];
        for t in 0..batch {
            let mut bidx = vec![0; rank - 2];
            let mut rest = t;
            for dd in (0..rank - 2).rev() {
                bidx[dd] = rest % bdims[dd];
                rest /= bdims[dd];
            }
            let side_idx = |dims: &[usize], row: usize, col: usize| -> Vec<usize> {
                let mut v: Vec<usize> =
                    bidx.iter().zip(&dims[..rank - 2]).map(|(b, d)| if *d == 1 { 0 } else { *b }).collect();
                v.extend([row, col]);
                v
            };
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k).map(|p| lv(&side_idx(lhs.0, i, p)) * rv(&side_idx(rhs.0, p, j))).sum();
                    // out[t, i, j] is D^T: D at column i, row j.
                    let got = d[t * g.d.batch_stride as usize + i * g.d.ld as usize + j];
                    assert_eq!(got, want, "batch {t} ({i}, {j}) of {lhs:?} x {rhs:?}");
                }
            }
        }
    }

    #[test]
    fn row_major_operands_as_a_linear_layer_runs_them() {
        // x [5, 7] x w [7, 3] (Burn's Linear weight is [d_in, d_out]).
        check((&[5, 7], &[7, 1]), (&[7, 3], &[3, 1]));
        // Pitched rows, as CubeCL's CUDA allocator lays them out: rows of 7 floats padded to 8.
        check((&[5, 7], &[8, 1]), (&[7, 3], &[4, 1]));
    }

    #[test]
    fn transposed_views_are_read_in_place() {
        // The Linear backward: dy [5, 3] x w^T (w [7, 3] stored, viewed [3, 7] with strides [1, 3]).
        let g = gemm((&[5, 3], &[3, 1]), (&[3, 7], &[1, 3])).unwrap();
        assert!(g.a.transposed && !g.b.transposed);
        check((&[5, 3], &[3, 1]), (&[3, 7], &[1, 3]));
        // And x^T dy for the weight gradient: x [5, 7] viewed [7, 5] with strides [1, 7].
        check((&[7, 5], &[1, 7]), (&[5, 3], &[3, 1]));
        // Both transposed, with padded leading dimensions.
        check((&[4, 6], &[1, 8]), (&[6, 2], &[1, 8]));
    }

    #[test]
    fn batches_collapse_and_a_side_of_ones_broadcasts() {
        check((&[2, 3, 4, 5], &[60, 20, 5, 1]), (&[2, 3, 5, 2], &[30, 10, 2, 1]));
        check((&[2, 3, 4, 5], &[60, 20, 5, 1]), (&[1, 1, 5, 2], &[10, 10, 2, 1]));
        check((&[1, 4, 5], &[20, 5, 1]), (&[3, 5, 2], &[10, 2, 1]));
        let g = gemm((&[2, 3, 4, 5], &[60, 20, 5, 1]), (&[1, 1, 5, 2], &[10, 10, 2, 1])).unwrap();
        assert_eq!((g.a.batch_stride, g.batch, g.out_dims.clone()), (0, 6, vec![2, 3, 4, 2]));
    }

    #[test]
    fn what_cublaslt_is_not_given() {
        let refused = |l: (&[usize], &[usize]), r: (&[usize], &[usize]), says: &str| {
            let why = gemm(l, r).unwrap_err().0;
            assert!(why.contains(says), "{why}");
        };
        refused((&[5, 7], &[7, 1]), (&[6, 3], &[3, 1]), "inner dims 7 and 6");
        refused((&[2, 5, 7], &[35, 7, 1]), (&[3, 7, 3], &[21, 3, 1]), "broadcast partly");
        // Neither rows nor columns contiguous (a strided slice of both).
        refused((&[5, 7], &[14, 2]), (&[7, 3], &[3, 1]), "neither rows nor columns");
        // A permuted batch: dims [2, 3] with strides that do not nest.
        refused((&[2, 3, 4, 5], &[20, 40, 5, 1]), (&[2, 3, 5, 2], &[30, 10, 2, 1]), "do not collapse");
        refused((&[0, 7], &[7, 1]), (&[7, 3], &[3, 1]), "empty");
        refused((&[7], &[1]), (&[7], &[1]), "ranks 1 and 1");
    }
}
