//! A suite's own learnable artifacts: names, kinds, inline or file content,
//! the bounds of tunable JSON fields.

use super::*;

impl Validator {
    pub(super) fn artifacts(&mut self, suite: &str, raw: Vec<Spanned<raw::Artifact>>) -> Vec<ArtifactDef> {
        let mut out: Vec<ArtifactDef> = Vec::new();
        for (i, a) in raw.into_iter().enumerate() {
            let at = a.referenced;
            let a = a.value;
            let field = format!("artifacts[{i}]");
            let name = a.name.value.trim().to_string();
            if !valid_name(&name) {
                self.issue(
                    a.name.referenced,
                    format!("{field}.name"),
                    format!("artifact name `{name}` is not allowed"),
                    NAME_HINT,
                );
                continue;
            }
            if builtin::find(&name).is_some() {
                self.issue(
                    a.name.referenced,
                    format!("{field}.name"),
                    format!("`{name}` is a built-in artifact"),
                    "pick another name; built-ins are pinned with `baseline_artifacts`",
                );
                continue;
            }
            if out.iter().any(|d| d.name == name) {
                self.issue(
                    a.name.referenced,
                    format!("{field}.name"),
                    format!("artifact `{name}` is declared twice"),
                    "remove or rename one",
                );
                continue;
            }
            let kind = a.kind.value;
            let content = match (a.content, a.file) {
                (Some(_), Some(f)) => {
                    self.issue(
                        f.referenced,
                        format!("{field}.file"),
                        "give either `content` or `file`, not both",
                        "remove one of them",
                    );
                    continue;
                }
                (None, None) => {
                    self.issue(
                        at,
                        &field,
                        "the artifact has no `content` or `file`",
                        "add `content:` inline or `file:` with a path relative to the suite",
                    );
                    continue;
                }
                (Some(c), None) => self.inline_content(&field, kind, c),
                (None, Some(f)) => {
                    let Some(path) = self.inside(f.referenced, &format!("{field}.file"), &f.value) else {
                        continue;
                    };
                    match std::fs::read_to_string(&path) {
                        Ok(text) if kind == ArtifactKind::Json => {
                            match serde_json::from_str::<serde_json::Value>(&text) {
                                Ok(v) => Some(v),
                                Err(e) => {
                                    self.issue(
                                        f.referenced,
                                        format!("{field}.file"),
                                        format!("{} is not valid JSON: {e}", path.display()),
                                        "fix the file or declare the artifact as `type: text`",
                                    );
                                    None
                                }
                            }
                        }
                        Ok(text) => Some(serde_json::Value::String(text)),
                        Err(e) => {
                            self.issue(
                                f.referenced,
                                format!("{field}.file"),
                                format!("cannot read {}: {e}", path.display()),
                                "paths are relative to the suite file's folder",
                            );
                            None
                        }
                    }
                }
            };
            let Some(content) = content else { continue };
            let mut fields = BTreeMap::new();
            for (fname, bounds) in a.fields {
                let ffield = format!("{field}.fields.{fname}");
                let b = bounds.value;
                if kind != ArtifactKind::Json {
                    self.issue(
                        bounds.referenced,
                        ffield,
                        "only JSON artifacts have tunable fields",
                        "declare the artifact with `type: json`",
                    );
                    continue;
                }
                if !(b.min.is_finite() && b.max.is_finite() && b.min < b.max) {
                    self.issue(
                        bounds.referenced,
                        ffield,
                        format!("bounds [{}, {}] are not a range", b.min, b.max),
                        "set finite `min` < `max`",
                    );
                    continue;
                }
                match content.get(&fname).and_then(serde_json::Value::as_f64) {
                    None => self.issue(
                        bounds.referenced,
                        ffield,
                        format!("the artifact's content has no numeric field `{fname}`"),
                        "tunable fields must be numbers at the top level of the JSON content",
                    ),
                    Some(x) if !b.contains(x) => self.issue(
                        bounds.referenced,
                        ffield,
                        format!("initial value {x} is outside [{}, {}]", b.min, b.max),
                        "widen the bounds or change the initial value",
                    ),
                    Some(_) => {
                        fields.insert(fname, b);
                    }
                }
            }
            let default_content = match kind {
                ArtifactKind::Json => serde_json::to_string_pretty(&content).unwrap_or_default() + "\n",
                ArtifactKind::Text => content.as_str().unwrap_or_default().to_string(),
            };
            out.push(ArtifactDef {
                name,
                kind,
                origin: Origin::Suite(suite.to_string()),
                description: a.description.unwrap_or_default(),
                default_content,
                fields,
            });
        }
        out
    }

    fn inline_content(
        &mut self,
        field: &str,
        kind: ArtifactKind,
        c: Spanned<serde_json::Value>,
    ) -> Option<serde_json::Value> {
        match (kind, &c.value) {
            (ArtifactKind::Json, serde_json::Value::Object(_)) => Some(c.value),
            (ArtifactKind::Text, serde_json::Value::String(_)) => Some(c.value),
            (ArtifactKind::Json, _) => {
                self.issue(
                    c.referenced,
                    format!("{field}.content"),
                    "a JSON artifact's content must be a mapping",
                    "write the settings as `key: value` lines under `content:`",
                );
                None
            }
            (ArtifactKind::Text, _) => {
                self.issue(
                    c.referenced,
                    format!("{field}.content"),
                    "a text artifact's content must be text",
                    "quote it, or use a `|` block",
                );
                None
            }
        }
    }
}
