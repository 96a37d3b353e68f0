//! TLS for `rediss://` URLs (rustls with the ring provider): the server's certificate must
//! chain to the system's certificate authorities or to those of `tls_ca_file`, and name the
//! URL's host. Checks cannot be turned off (a `#insecure` URL is refused). The trust store is
//! read on the first connect, not when a queue is made.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

pub(crate) struct TlsSettings {
    name: ServerName<'static>,
    ca_file: Option<PathBuf>,
    config: OnceLock<Result<Arc<ClientConfig>, String>>,
}

/// The TLS settings of `url` (whose host is `host`), checked without I/O.
pub(crate) fn settings(
    url: &str,
    host: &str,
    ca_file: Option<&Path>,
) -> Result<TlsSettings, String> {
    if url
        .split_once('#')
        .is_some_and(|(_, f)| f.contains("insecure"))
    {
        return Err(
            "certificate checks cannot be turned off (#insecure); pass tls_ca_file=<PEM \
                    file of your certificate authority> instead"
                .into(),
        );
    }
    let name = ServerName::try_from(host.to_owned())
        .map_err(|_| format!("{host:?} is not a host name TLS can check"))?;
    Ok(TlsSettings {
        name,
        ca_file: ca_file.map(Path::to_path_buf),
        config: OnceLock::new(),
    })
}

impl TlsSettings {
    fn config(&self) -> Result<Arc<ClientConfig>, String> {
        self.config
            .get_or_init(|| {
                let mut roots = RootCertStore::empty();
                let native = rustls_native_certs::load_native_certs();
                let (added, _) = roots.add_parsable_certificates(native.certs);
                if let Some(file) = &self.ca_file {
                    let certs = CertificateDer::pem_file_iter(file)
                        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                        .map_err(|e| format!("cannot read tls_ca_file {}: {e}", file.display()))?;
                    if certs.is_empty() {
                        return Err(format!(
                            "tls_ca_file {} holds no certificate",
                            file.display()
                        ));
                    }
                    for cert in certs {
                        roots.add(cert).map_err(|e| {
                            format!("tls_ca_file {}: bad certificate: {e}", file.display())
                        })?;
                    }
                } else if added == 0 {
                    return Err("no certificate authority found on this system; pass \
                                tls_ca_file"
                        .into());
                }
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let config = ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|e| e.to_string())?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                Ok(Arc::new(config))
            })
            .clone()
    }

    pub(crate) async fn connect(&self, stream: TcpStream) -> io::Result<TlsStream<TcpStream>> {
        let config = self.config().map_err(io::Error::other)?;
        TlsConnector::from(config)
            .connect(self.name.clone(), stream)
            .await
    }
}
