//! TLS settings beyond what a `rediss://` URL says: the certificate authorities to trust instead
//! of the system's, and the certificate the client presents when the server asks for one
//! (mutual TLS). Certificates are PEM, checked before anything is sent.

use crate::error::ConnectError;
use std::fmt;

/// How a `rediss://` (`rediss-cluster://`, `rediss-sentinel://`) connection proves who is at each end. The default trusts the system's root
/// certificates and presents no client certificate, which is what a `rediss://` URL alone does.
///
/// ```
/// use asynq_redis::{RedisConfig, RedisTarget, TlsOptions};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let ca_pem = b"-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n".to_vec();
/// let target = RedisTarget::from_url("rediss://redis.internal:6380")?;
/// let config = RedisConfig { tls: TlsOptions::new().trust(ca_pem), ..RedisConfig::new(target) };
/// # let _ = config;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsOptions {
    /// PEM certificates of the authorities to verify the server against, instead of the
    /// system's roots.
    pub root_certificates: Option<Vec<u8>>,
    /// The certificate chain and private key (both PEM) the client presents.
    pub client_certificate: Option<ClientCertificate>,
}

/// A client's certificate chain and private key, both PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCertificate {
    /// The certificate, and any intermediates after it.
    pub certificate: Vec<u8>,
    /// Its private key (PKCS#8, PKCS#1 or SEC1).
    pub key: Vec<u8>,
}

impl TlsOptions {
    /// The defaults: the system's roots, no client certificate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Verifies servers against the authorities in `pem` only.
    pub fn trust(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificates = Some(pem.into());
        self
    }

    /// Presents `certificate` (PEM), proven with `key` (PEM), when the server asks.
    pub fn identity(mut self, certificate: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> Self {
        self.client_certificate = Some(ClientCertificate { certificate: certificate.into(), key: key.into() });
        self
    }

    /// Whether these are the defaults, which a `rediss://` URL gives by itself.
    pub(crate) fn is_default(&self) -> bool {
        self.root_certificates.is_none() && self.client_certificate.is_none()
    }

    /// The certificates as redis-rs takes them, after checking that each is PEM of the right kind.
    pub(crate) fn certificates(&self) -> Result<redis::TlsCertificates, ConnectError> {
        if let Some(roots) = &self.root_certificates {
            expect_pem(roots, "CERTIFICATE", "the root certificates")?;
        }
        if let Some(client) = &self.client_certificate {
            expect_pem(&client.certificate, "CERTIFICATE", "the client certificate")?;
            expect_pem(&client.key, "PRIVATE KEY", "the client key")?;
        }
        Ok(redis::TlsCertificates {
            client_tls: self.client_certificate.as_ref().map(|client| redis::ClientTlsConfig {
                client_cert: client.certificate.clone(),
                client_key: client.key.clone(),
            }),
            root_cert: self.root_certificates.clone(),
        })
    }
}

/// Fails unless `pem` holds a PEM block whose label ends with `label`.
fn expect_pem(pem: &[u8], label: &str, what: &str) -> Result<(), ConnectError> {
    let text = String::from_utf8_lossy(pem);
    let found = text.lines().any(|line| {
        line.strip_prefix("-----BEGIN ")
            .and_then(|rest| rest.strip_suffix("-----"))
            .is_some_and(|block| block.ends_with(label))
    });
    if found {
        Ok(())
    } else {
        Err(ConnectError::Tls { reason: format!("{what} are not PEM: no \"-----BEGIN …{label}-----\" block") })
    }
}

impl fmt::Debug for TlsOptions {
    // By hand, so that a private key never reaches a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions")
            .field("root_certificates", &self.root_certificates.as_ref().map(|pem| format!("{} bytes", pem.len())))
            .field("client_certificate", &self.client_certificate)
            .finish()
    }
}

impl fmt::Debug for ClientCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCertificate")
            .field("certificate", &format!("{} bytes", self.certificate.len()))
            .field("key", &"<redacted>")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pem_of_the_right_kind_is_accepted_and_keys_never_print() {
        let cert = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".to_vec();
        let key = b"-----BEGIN PRIVATE KEY-----\nsecret-key-bytes\n-----END PRIVATE KEY-----\n".to_vec();
        let rsa_key = b"-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----\n".to_vec();
        assert!(TlsOptions::new().trust(cert.clone()).identity(cert.clone(), key.clone()).certificates().is_ok());
        assert!(TlsOptions::new().identity(cert.clone(), rsa_key).certificates().is_ok());
        for (options, what) in [
            (TlsOptions::new().trust(b"not pem".to_vec()), "root certificates"),
            (TlsOptions::new().trust(key.clone()), "root certificates"),
            (TlsOptions::new().identity(key.clone(), key.clone()), "client certificate"),
            (TlsOptions::new().identity(cert.clone(), cert.clone()), "client key"),
        ] {
            let err = options.certificates().unwrap_err().to_string();
            assert!(err.contains(what), "{err}");
        }
        let debug = format!("{:?}", TlsOptions::new().identity(cert, key));
        assert!(!debug.contains("secret-key-bytes") && debug.contains("<redacted>"), "{debug}");
        assert!(TlsOptions::new().is_default());
    }
}
