//! Certificates for TLS tests: a private certificate authority made with `openssl` at test
//! time, the server and client certificates it signed, and a redis-server serving TLS with them.

use crate::RedisServer;
use std::net::TcpListener;
use std::process::Command;

/// A private certificate authority and the certificates it signed, made with `openssl`.
#[derive(Debug)]
pub struct CertificateAuthority {
    dir: tempfile::TempDir,
}

impl CertificateAuthority {
    /// A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let openssl = |args: &[&str]| {
            let output = Command::new("openssl").args(args).current_dir(dir.path()).output().expect("openssl runs");
            assert!(output.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        };
        let self_signed = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj"];
        openssl(&[&self_signed[..], &["/CN=asynq test CA", "-keyout", "ca.key", "-out", "ca.crt"]].concat());
        std::fs::write(dir.path().join("server.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
        std::fs::write(dir.path().join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
        for (name, subject) in [("server", "/CN=127.0.0.1"), ("client", "/CN=asynq test client")] {
            let (key, csr, crt, ext) =
                (format!("{name}.key"), format!("{name}.csr"), format!("{name}.crt"), format!("{name}.ext"));
            openssl(&["req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", &key, "-out", &csr]);
            openssl(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "1",
                "-extfile",
                &ext,
                "-out",
                &crt,
            ]);
        }
        Self { dir }
    }

    /// The path of `name`: `ca.crt`, `server.crt`, `server.key`, `client.crt` or `client.key`.
    pub fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// The contents of `name` (see [`CertificateAuthority::path`]).
    pub fn pem(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.path().join(name)).unwrap()
    }

    /// A redis-server on a TLS port with the server certificate; returns it and the TLS port.
    pub fn redis(&self, authenticate_clients: bool) -> (RedisServer, u16) {
        let port = free_tls_port();
        let mut args = self.server_args(port);
        args.extend(["--tls-auth-clients".to_owned(), if authenticate_clients { "yes" } else { "no" }.to_owned()]);
        (RedisServer::start_with(&args), port)
    }

    /// The redis-server arguments that serve TLS on `tls_port` with the server certificate and
    /// trust this authority (for clients' certificates and the server's own TLS connections).
    pub(crate) fn server_args(&self, tls_port: u16) -> Vec<String> {
        let mut args = vec!["--tls-port".to_owned(), tls_port.to_string()];
        for (flag, file) in
            [("--tls-cert-file", "server.crt"), ("--tls-key-file", "server.key"), ("--tls-ca-cert-file", "ca.crt")]
        {
            args.extend([flag.to_owned(), self.path(file)]);
        }
        args
    }
}

/// A loopback port free now, for a server's TLS port (the harness picks its plain ports).
pub(crate) fn free_tls_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Default for CertificateAuthority {
    fn default() -> Self {
        Self::new()
    }
}
