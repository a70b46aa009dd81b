//! The merge: two or more lines of reasoning synthesised into a list of claims, each naming
//! the steps it came from (or "new"). The answer's schema lists the step references the
//! model may name, so the local grammar cannot invent one; what a remote model writes
//! outside them is dropped. The result is a `synthesis` node that `aggregates` its sources,
//! with the claims and their provenance in its meta.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::steps::{DiffStep, steps_of};
use super::{CLAIMS_KEY, DiffError, Judge};
use crate::engines::got::call_model;
use crate::engines::llm::ToolSpec;
use crate::engines::structured::Artifact;
use crate::store::{Edge, EdgeType, Node, NodeId, NodeType, SessionId, Store};

/// One claim as the model writes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClaimDraft {
    #[schemars(length(min = 1, max = 300))]
    pub text: String,
    /// The steps the claim rests on (`A2`, `B1`), or `new`.
    #[schemars(length(min = 1, max = 4))]
    pub sources: Vec<String>,
}

/// The structured answer of a merge.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MergeAnswer {
    #[schemars(length(min = 1, max = 8))]
    pub claims: Vec<ClaimDraft>,
}

impl Artifact for MergeAnswer {
    const TOOL: &'static str = "record_merge";
    const DESCRIPTION: &'static str =
        "Record the merged claims, each with the steps (A1, B2, …) it came from, or new.";
}

/// The reference a claim gives when it rests on no step.
pub const NEW: &str = "new";

/// The merge schema with `sources` narrowed to `refs` and [`NEW`].
pub fn merge_schema(refs: &[String]) -> ToolSpec {
    let mut spec = MergeAnswer::schema();
    let mut names: Vec<Value> = refs.iter().map(|r| json!(r)).collect();
    names.push(json!(NEW));
    narrow_sources(&mut spec.input_schema, &names);
    spec
}

fn narrow_sources(v: &mut Value, names: &[Value]) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Object(props)) = m.get_mut("properties")
                && let Some(Value::Object(sources)) = props.get_mut("sources")
            {
                sources.insert("items".into(), json!({"type": "string", "enum": names}));
            }
            for child in m.values_mut() {
                narrow_sources(child, names);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|c| narrow_sources(c, names)),
        _ => {}
    }
}

/// Where a claim came from: one source node and the steps of it (indices from 0).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub node: NodeId,
    pub steps: Vec<u32>,
}

/// One merged claim. `new` is true when it names no step of any source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub text: String,
    pub provenance: Vec<Provenance>,
    pub new: bool,
}

/// The claims stored on a merge's synthesis node, in order (none for any other node).
pub fn claims_of(node: &Node) -> Vec<Claim> {
    node.meta
        .get(CLAIMS_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// One line of reasoning going into a merge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergeSource {
    /// Its letter in the prompt and in claim references: A, B, C, …
    pub letter: char,
    pub node: NodeId,
    pub kind: NodeType,
    pub steps: Vec<DiffStep>,
}

/// A finished merge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Merged {
    pub node: NodeId,
    pub session: SessionId,
    pub sources: Vec<MergeSource>,
    pub claims: Vec<Claim>,
}

impl Merged {
    /// A claim's sources as references (`A2 B1`), or `new`.
    pub fn refs(&self, claim: &Claim) -> String {
        refs_of(&self.sources, claim)
    }
}

/// A claim's sources as the references of `sources` (`A2 B1`), or `new`; a node that is
/// not among the sources shows as its short id.
pub fn refs_of(sources: &[MergeSource], claim: &Claim) -> String {
    if claim.new || claim.provenance.is_empty() {
        return NEW.to_string();
    }
    let mut out = Vec::new();
    for p in &claim.provenance {
        let letter = sources.iter().find(|s| s.node == p.node).map(|s| s.letter);
        for step in &p.steps {
            out.push(match letter {
                Some(l) => format!("{l}{}", step + 1),
                None => format!("{}#{}", p.node.short(), step + 1),
            });
        }
    }
    out.join(" ")
}

/// What to merge.
#[derive(Clone, Debug, Default)]
pub struct MergeRequest {
    pub nodes: Vec<NodeId>,
    pub focus: Option<String>,
    /// Extra meta for the synthesis node (e.g. the steer run it belongs to).
    pub meta: Map<String, Value>,
}

/// The merge engine: the model behind a [`Judge`] and the store the node goes to.
#[derive(Clone)]
pub struct Merger {
    pub store: Store,
    pub model: Judge,
    /// Longest step text given to the model, in characters.
    pub step_chars: usize,
    /// Claims kept at most.
    pub max_claims: usize,
}

/// Letters name at most 26 sources.
const MAX_SOURCES: usize = 26;

impl Merger {
    pub async fn merge(
        &self,
        req: MergeRequest,
        cancel: &CancellationToken,
    ) -> Result<Merged, DiffError> {
        let mut ids: Vec<NodeId> = Vec::new();
        for id in req.nodes {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        if ids.len() < 2 {
            return Err(DiffError::Invalid(
                "a merge needs two or more different nodes".into(),
            ));
        }
        if ids.len() > MAX_SOURCES {
            return Err(DiffError::Invalid(format!(
                "a merge takes at most {MAX_SOURCES} nodes"
            )));
        }
        let nodes = super::load_nodes(&self.store, ids).await?;
        let mut sources = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            let steps = steps_of(n);
            if steps.is_empty() {
                return Err(DiffError::Empty(n.id.to_string()));
            }
            sources.push(MergeSource {
                letter: (b'A' + i as u8) as char,
                node: n.id,
                kind: n.kind,
                steps,
            });
        }
        let (user, refs) = self.prompt(&sources, req.focus.as_deref());
        let schema = merge_schema(&refs);
        let mut last = String::new();
        let mut claims = None;
        for _ in 0..2 {
            let reply = call_model(
                self.model.provider.as_ref(),
                &self.model.call,
                &self.model.prompt,
                user.clone(),
                schema.clone(),
                cancel,
            )
            .await
            .map_err(DiffError::Model)?;
            match read_claims(&reply.text, &sources) {
                Ok(c) => {
                    claims = Some(c);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let mut claims = claims.ok_or(DiffError::Malformed(last))?;
        claims.truncate(self.max_claims.max(1));
        let first = &nodes[0];
        let mut node = Node::new(
            first.session,
            NodeType::Synthesis,
            claims
                .iter()
                .map(|c| format!("- {}", c.text))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        node.model = Some(self.model.call.model.clone());
        node.meta = req.meta;
        node.meta.insert("purpose".into(), json!("merge"));
        if let Some(f) = req.focus.filter(|f| !f.trim().is_empty()) {
            node.meta.insert("focus".into(), json!(f));
        }
        node.meta.insert(
            "sources".into(),
            json!(sources.iter().map(|s| s.node).collect::<Vec<_>>()),
        );
        node.meta.insert(CLAIMS_KEY.into(), json!(claims));
        let merged = Merged {
            node: node.id,
            session: node.session,
            sources,
            claims,
        };
        let edges: Vec<NodeId> = merged.sources.iter().map(|s| s.node).collect();
        self.store
            .write_async(move |w| {
                w.put_node(&node)?;
                for s in edges {
                    w.put_edge(&Edge::new(node.id, EdgeType::Aggregates, s))?;
                }
                Ok(())
            })
            .await?;
        Ok(merged)
    }

    /// The user message (the focus, then each line's numbered steps) and the references.
    fn prompt(&self, sources: &[MergeSource], focus: Option<&str>) -> (String, Vec<String>) {
        let mut user = String::new();
        if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
            user.push_str(&format!("Focus on: {}\n\n", f.trim()));
        }
        let mut refs = Vec::new();
        for s in sources {
            user.push_str(&format!("Line {} ({}):\n", s.letter, s.kind.as_str()));
            for step in &s.steps {
                let r = format!("{}{}", s.letter, step.index + 1);
                let text: String = step.text.chars().take(self.step_chars).collect();
                user.push_str(&format!("{r}. [{}] {}\n", step.kind, one_line(&text)));
                refs.push(r);
            }
            user.push('\n');
        }
        (user, refs)
    }
}

fn one_line(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A reference such as `A2`, `b 3` or `[C1]` as (source position, step index from 0).
fn parse_ref(r: &str, sources: &[MergeSource]) -> Option<(usize, u32)> {
    let t: String = r.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    let mut chars = t.chars();
    let letter = chars.next()?.to_ascii_uppercase();
    let n: u32 = chars.as_str().parse().ok()?;
    let pos = sources.iter().position(|s| s.letter == letter)?;
    let step = n.checked_sub(1)?;
    sources[pos]
        .steps
        .iter()
        .any(|s| s.index == step)
        .then_some((pos, step))
}

/// The claims of a model's answer, leniently: `sources` may be a list or one string of
/// references; references that name no step are dropped, and a claim left with none is new.
pub(super) fn read_claims(raw: &str, sources: &[MergeSource]) -> Result<Vec<Claim>, String> {
    let obj = crate::engines::got::json_object(raw)
        .ok_or_else(|| "the merge answer holds no JSON object".to_string())?;
    let list = obj
        .get("claims")
        .and_then(Value::as_array)
        .ok_or_else(|| "the merge answer has no claims list".to_string())?;
    let mut out = Vec::new();
    for c in list {
        let text = match c {
            Value::String(s) => s.clone(),
            _ => c
                .get("text")
                .or_else(|| c.get("claim"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        };
        let text = text.trim().to_string();
        if text.is_empty() {
            continue;
        }
        let refs: Vec<String> = match c.get("sources").or_else(|| c.get("source")) {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(Value::String(s)) => s.split([',', ';', ' ']).map(str::to_string).collect(),
            _ => Vec::new(),
        };
        let mut provenance: Vec<Provenance> = Vec::new();
        for (pos, step) in refs.iter().filter_map(|r| parse_ref(r, sources)) {
            let node = sources[pos].node;
            match provenance.iter_mut().find(|p| p.node == node) {
                Some(p) if !p.steps.contains(&step) => p.steps.push(step),
                Some(_) => {}
                None => provenance.push(Provenance {
                    node,
                    steps: vec![step],
                }),
            }
        }
        out.push(Claim {
            text,
            new: provenance.is_empty(),
            provenance,
        });
    }
    if out.is_empty() {
        return Err("the merge answer has no claim with text".into());
    }
    Ok(out)
}
