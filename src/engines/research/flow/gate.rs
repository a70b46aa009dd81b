//! The approval gate: a person's decision applied to a paused run.

use super::Running;
use crate::engines::research::state::{Stage, Status};
use crate::engines::research::{Decision, ResearchError};

impl Running<'_> {
    /// Applies a person's decision at the gate.
    pub(in crate::engines::research) async fn decide(
        &mut self,
        d: Decision,
    ) -> Result<(), ResearchError> {
        let waiting = self.st.status == Status::AwaitingApproval;
        let refuse = |why: &str| ResearchError::Decision {
            run: self.run.id,
            why: why.to_string(),
        };
        if d.is_empty() {
            return if waiting {
                Err(refuse(
                    "is waiting for approval: resume it with --approve, or --reject [--note TEXT]",
                ))
            } else {
                Ok(())
            };
        }
        if !waiting {
            return Err(refuse(&format!(
                "is not waiting for approval (it is {}); resume it without --approve/--reject/--edit",
                self.st.status.as_str()
            )));
        }
        if d.approve && d.reject.is_some() {
            return Err(refuse("cannot be approved and rejected at once"));
        }
        let cap = self.e.params.reasoning_entries;
        if let Some(note) = d.reject {
            self.st.revision += 1;
            let note = note.trim().to_string();
            let said = if note.is_empty() {
                "rejected by you".to_string()
            } else {
                format!("rejected by you: {note}")
            };
            self.annotate(&said).await?;
            self.st.reason(Stage::HitlGate, said, cap);
            self.st.feedback = if note.is_empty() {
                vec!["The person reviewing the plan rejected it; propose a different plan.".into()]
            } else {
                vec![note]
            };
            self.st.next = if self.st.revision >= self.st.max_plan_revisions {
                self.end_rejected();
                Stage::End
            } else {
                Stage::Thinker
            };
            return Ok(());
        }
        if !d.edits.is_empty() {
            let plan = self.st.plan.as_mut().ok_or_else(|| refuse("has no plan"))?;
            let mut said = Vec::new();
            for edit in &d.edits {
                let n = plan.steps.len();
                let step = plan
                    .steps
                    .get_mut(edit.step.wrapping_sub(1))
                    .ok_or_else(|| refuse(&format!("has no step {} (it has {n})", edit.step)))?;
                if let Some(t) = edit.tool {
                    step.tool = t;
                }
                if let Some(i) = &edit.input {
                    step.input = i.clone();
                }
                said.push(format!(
                    "step {} → {} {:?}",
                    edit.step, step.tool, step.input
                ));
            }
            let said = format!("edited by you: {}", said.join("; "));
            self.annotate(&said).await?;
            self.st.reason(Stage::HitlGate, said, cap);
            // The edited plan goes through the audit again; approval, if given, waits for it.
            self.approve |= d.approve;
            self.st.next = Stage::Auditor;
            return Ok(());
        }
        self.annotate("approved by you").await?;
        self.st.reason(Stage::HitlGate, "approved by you", cap);
        self.st.human_approved = true;
        self.st.next = Stage::ToolExecutor;
        Ok(())
    }
}
