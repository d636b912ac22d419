fn main() {
    let (mut pi, mut h, mut sign) = (0.0f64, 0.0f64, 1.0f64);
    let n: i64 = std::hint::black_box(10_000_000);
    for i in 0..n {
        let k = i as f64;
        pi += sign / (2.0 * k + 1.0);
        h += 1.0 / (k + 1.0) * (1.0 + 0.5 / (k + 2.0));
        sign = -sign;
    }
    println!("{} {}", 4.0 * pi, h);
}
