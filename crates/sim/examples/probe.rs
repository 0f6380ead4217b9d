use raidlab_core::Plan;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let plan = Plan::load(std::path::Path::new(&path)).unwrap_or_else(|e| panic!("{e}"));
    for case in plan.cases() {
        let t = std::time::Instant::now();
        let out = raidlab_sim::simulate(case, 1).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out.fio_json).unwrap();
        let j = &v["jobs"][0];
        let f = |d: &str, k: &str| j[d][k].as_f64().unwrap_or(0.0);
        println!("{:45} r {:8.1} iops {:7.1} MB/s {:6.2} ms | w {:8.1} iops {:7.1} MB/s {:6.2} ms | {:?} ev/s {:.0}",
            case.label(), f("read","iops"), f("read","bw_bytes")/1e6, j["read"]["lat_ns"]["mean"].as_f64().unwrap()/1e6,
            f("write","iops"), f("write","bw_bytes")/1e6, j["write"]["lat_ns"]["mean"].as_f64().unwrap()/1e6,
            v["disk_util"].as_array().unwrap().iter().map(|d| (d["read_ios"].as_u64().unwrap(), d["write_ios"].as_u64().unwrap())).collect::<Vec<_>>(),
            out.host_ios as f64 / t.elapsed().as_secs_f64());
    }
}
