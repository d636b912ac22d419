fn main() {
    let n: usize = std::hint::black_box(200);
    let mut a = vec![vec![0i64; n]; n];
    let mut b = vec![vec![0i64; n]; n];
    let mut c = vec![vec![0i64; n]; n];
    for i in 0..n { for j in 0..n { a[i][j] = (i * 3 + j) as i64; b[i][j] = i as i64 - 2 * j as i64; } }
    for i in 0..n { for j in 0..n { let mut s = 0i64; for k in 0..n { s = s.wrapping_add(a[i][k].wrapping_mul(b[k][j])); } c[i][j] = s; } }
    let mut sum = 0i64;
    for i in 0..n { for j in 0..n { sum = sum.wrapping_mul(31).wrapping_add(c[i][j]); } }
    println!("{sum}");
}
