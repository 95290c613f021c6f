-- The session variable relabel_label.sql set, gone once the relabel is done.
reset variable relabel_rubric_id
