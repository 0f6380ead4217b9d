//! Serve one timed member until stdin closes: `cargo run -p raidlab-timed --example serve
//! -- SOCKET FILE SIZE MODEL`, then point an NBD client (qemu-io, qemu-img) at
//! `nbd+unix:///?socket=SOCKET`. Prints the member's counters at the end.
use raidlab_core::disk::DiskModel;
use raidlab_timed::{Spec, TimedMember, Transport};

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let model = DiskModel::preset(&a[3]).expect("a preset name");
    let m = TimedMember::start(&Spec {
        socket: a[0].clone().into(),
        file: a[1].clone().into(),
        size: a[2].parse().expect("a size in bytes"),
        model,
        write_cache: false,
        scheduler: raidlab_core::Scheduler::None,
        seed: 1,
        transport: Transport::Nbd,
    })
    .expect("member starts");
    let mut s = String::new();
    let _ = std::io::stdin().read_line(&mut s);
    println!("{:?}", m.finish());
}
