fn main() {
    let mut x: i64 = 88172645463325252;
    let mut lcg: i64 = 1;
    let mut sum: i64 = 0;
    let n: i64 = std::hint::black_box(10_000_000);
    for i in 0..n {
        lcg = lcg.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        x ^= x << 13;
        x ^= ((x as u64) >> 7) as i64;
        x ^= x << 17;
        sum = sum.wrapping_add((((lcg as u64) >> 33) as i64) ^ (x & 0xFFFF) ^ i);
    }
    println!("{sum} {lcg} {x}");
}
