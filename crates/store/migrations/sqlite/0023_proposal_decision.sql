-- What the decision to keep or roll back a winner saw, task by task: the
-- paired evidence (pairs better / worse / tied, the mean gain with its 95%
-- bootstrap interval, the sign test's p-value) as JSON. Set with
-- observed_loss_reduction once the epoch after the winner closed; NULL
-- before, and on proposals judged before this column.
ALTER TABLE proposals ADD COLUMN decision_json TEXT;
