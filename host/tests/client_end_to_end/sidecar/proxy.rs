//! A TCP proxy that can swallow the answers: stasis stores a batch, its acknowledgement never
//! reaches the sidecar. That is the moment a stamp must survive a restart.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The proxy: requests always pass; answers pass unless swallowing.
pub struct LossyProxy {
    pub base: String,
    swallow: Arc<AtomicBool>,
}

impl LossyProxy {
    /// Listens on a free loopback port and forwards to `upstream_port`.
    pub fn start(upstream_port: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let swallow = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&swallow);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(upstream) = TcpStream::connect(("127.0.0.1", upstream_port)) else {
                    continue;
                };
                let (Ok(client_in), Ok(upstream_in)) = (client.try_clone(), upstream.try_clone())
                else {
                    continue;
                };
                let never = Arc::new(AtomicBool::new(false));
                std::thread::spawn(move || pipe(client_in, upstream, &never));
                let flag = Arc::clone(&flag);
                std::thread::spawn(move || pipe(upstream_in, client, &flag));
            }
        });
        LossyProxy { base, swallow }
    }

    /// From now on, answers are read from stasis and thrown away (or passed again).
    pub fn swallow_answers(&self, on: bool) {
        self.swallow.store(on, Ordering::SeqCst);
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream, swallow: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if swallow.load(Ordering::SeqCst) {
            continue;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
