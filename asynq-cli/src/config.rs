//! The config file (`--config`, default `$HOME/.asynq.yaml`): YAML whose keys are the long names
//! of the connection flags, filling in every flag that neither the command line nor the
//! environment set.

use crate::cli::GlobalArgs;
use crate::error::CliError;
use asynq_redis::Namespace;
use clap::ArgMatches;
use clap::parser::ValueSource;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The settings a config file may hold, named as the long flags.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigFile {
    uri: Option<String>,
    db: Option<u32>,
    password: Option<String>,
    username: Option<String>,
    cluster: Option<bool>,
    cluster_addrs: Option<String>,
    tls: Option<bool>,
    tls_server: Option<String>,
    insecure: Option<bool>,
    tls_ca_cert: Option<PathBuf>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    sentinel_addrs: Option<String>,
    master: Option<String>,
    namespace: Option<String>,
    archive_max_size: Option<usize>,
    archive_max_age: Option<String>,
}

impl ConfigFile {
    /// Reads the config file: the one `--config` names (it must exist), else
    /// `$HOME/.asynq.yaml` when there is one.
    pub(crate) fn load(explicit: Option<&Path>) -> Result<Self, CliError> {
        let (path, required) = match explicit {
            Some(path) => (path.to_path_buf(), true),
            None => match std::env::var_os("HOME") {
                Some(home) => (PathBuf::from(home).join(".asynq.yaml"), false),
                None => return Ok(Self::default()),
            },
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(CliError::usage(format!("cannot read config file {}: {e}", path.display()))),
        };
        let config =
            Self::parse(&text).map_err(|e| CliError::usage(format!("invalid config file {}: {e}", path.display())))?;
        config.check().map_err(|e| CliError::usage(format!("invalid config file {}: {e}", path.display())))?;
        Ok(config)
    }

    /// Checks the values as the flags' parsers would: a `db` within `--db`'s range, a valid
    /// `namespace`.
    fn check(&self) -> Result<(), String> {
        if let Some(db) = self.db.filter(|&db| db > crate::cli::MAX_DB) {
            return Err(format!("db {db} is not in 0..={}", crate::cli::MAX_DB));
        }
        if let Some(namespace) = &self.namespace {
            Namespace::new(namespace.as_str()).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Parses config file text (an empty file is an empty config).
    pub(crate) fn parse(text: &str) -> Result<Self, serde_yaml_ng::Error> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        serde_yaml_ng::from_str(text)
    }

    /// Fills in each flag of `args` that `matches` says neither the command line nor the
    /// environment set: flag > environment > config file > default.
    pub(crate) fn apply(self, args: &mut GlobalArgs, matches: &ArgMatches) {
        let unset = |id: &str| matches!(matches.value_source(id), None | Some(ValueSource::DefaultValue));
        fn fill<T>(slot: &mut T, unset: bool, value: Option<T>) {
            if let (true, Some(value)) = (unset, value) {
                *slot = value;
            }
        }
        fill(&mut args.uri, unset("uri"), self.uri);
        fill(&mut args.db, unset("db"), self.db);
        fill(&mut args.password, unset("password"), self.password.map(Some));
        fill(&mut args.username, unset("username"), self.username.map(Some));
        fill(&mut args.cluster, unset("cluster"), self.cluster);
        fill(&mut args.cluster_addrs, unset("cluster_addrs"), self.cluster_addrs);
        fill(&mut args.tls, unset("tls"), self.tls);
        fill(&mut args.tls_server, unset("tls_server"), self.tls_server.map(Some));
        fill(&mut args.insecure, unset("insecure"), self.insecure);
        fill(&mut args.tls_ca_cert, unset("tls_ca_cert"), self.tls_ca_cert.map(Some));
        fill(&mut args.tls_cert, unset("tls_cert"), self.tls_cert.map(Some));
        fill(&mut args.tls_key, unset("tls_key"), self.tls_key.map(Some));
        fill(&mut args.sentinel_addrs, unset("sentinel_addrs"), self.sentinel_addrs.map(Some));
        fill(&mut args.master, unset("master"), self.master.map(Some));
        fill(&mut args.archive_max_size, unset("archive_max_size"), self.archive_max_size.map(Some));
        fill(&mut args.archive_max_age, unset("archive_max_age"), self.archive_max_age.map(Some));
        // `check` validated it when the file was loaded.
        fill(&mut args.namespace, unset("namespace"), self.namespace.and_then(|n| Namespace::new(n).ok()).map(Some));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::{CommandFactory, FromArgMatches};

    fn resolve(argv: &[&str], yaml: &str) -> GlobalArgs {
        let matches = Cli::command().try_get_matches_from(argv).unwrap();
        let mut cli = Cli::from_arg_matches(&matches).unwrap();
        ConfigFile::parse(yaml).unwrap().apply(&mut cli.global, &matches);
        cli.global
    }

    #[test]
    fn the_config_file_fills_what_flags_leave_unset() {
        let yaml = "uri: 10.0.0.1:6380\ndb: 3\npassword: secret\ncluster: true\n";
        let args = resolve(&["asynq", "stats"], yaml);
        assert_eq!(
            (args.uri.as_str(), args.db, args.password.as_deref(), args.cluster),
            ("10.0.0.1:6380", 3, Some("secret"), true)
        );
        let args = resolve(&["asynq", "stats", "-u", "flag:1", "-n", "0"], yaml);
        assert_eq!((args.uri.as_str(), args.db), ("flag:1", 0));
        let args = resolve(&["asynq", "stats"], "namespace: billing\n");
        assert_eq!(args.namespace.as_ref().map(Namespace::as_str), Some("billing"));
        let args = resolve(&["asynq", "--namespace", "orders", "stats"], "namespace: billing\n");
        assert_eq!(args.namespace.as_ref().map(Namespace::as_str), Some("orders"));
    }

    #[test]
    fn a_bad_namespace_is_refused() {
        let err = ConfigFile::parse("namespace: a:b\n").unwrap().check().unwrap_err();
        assert!(err.contains("invalid namespace"), "{err}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let err = ConfigFile::parse("url: x\n").unwrap_err().to_string();
        assert!(err.contains("unknown field `url`"), "{err}");
        assert!(ConfigFile::parse("").is_ok());
    }

    #[test]
    fn a_db_out_of_range_is_refused() {
        assert!(ConfigFile::parse("db: -1\n").is_err());
        let huge = ConfigFile::parse("db: 4294967295\n").unwrap().check().unwrap_err();
        assert!(huge.contains("0..=2147483647"), "{huge}");
        assert!(ConfigFile::parse("db: 2147483647\n").unwrap().check().is_ok());
    }
}
