"""SQL text handling: extraction from messages, statement counting, top-level ORDER BY."""

import pytest

from envhub.envs.sql.sqltext import (
    extract_sql,
    leading_keyword,
    orders_at_top_level,
    quote_literal,
    statements,
)


def test_last_sql_block_wins_and_counts_as_format():
    text = "First try:\n```sql\nSELECT 1\n```\nBetter:\n```sql\nSELECT 2;\n```\nDone."
    got = extract_sql(text)
    assert got.sql == "SELECT 2;" and got.fenced


def test_sqlite_label_and_case_are_accepted():
    assert extract_sql("```SQLite\nSELECT 3\n```") == extract_sql("```sql\nSELECT 3\n```")


def test_one_line_fences():
    assert extract_sql("Answer: ```sql SELECT 2``` done.") == extract_sql("```sql\nSELECT 2\n```")
    plain = extract_sql("x ```SELECT 3``` y")
    assert plain.sql == "SELECT 3" and not plain.fenced
    assert extract_sql("```sql\n```").sql == ""


def test_whole_message_when_no_block_is_not_the_format():
    got = extract_sql("  SELECT name FROM t  ")
    assert got.sql == "SELECT name FROM t" and not got.fenced


def test_other_fences_and_unclosed_blocks_are_used_but_not_the_format():
    assert extract_sql("```\nSELECT 4\n```").sql == "SELECT 4"
    assert not extract_sql("```\nSELECT 4\n```").fenced
    cut = extract_sql("Here:\n```sql\nSELECT 5 FROM t WHERE")
    assert cut.sql == "SELECT 5 FROM t WHERE" and not cut.fenced
    # a closed sql block beats a later python block
    mixed = extract_sql("```sql\nSELECT 6\n```\n```python\nprint(1)\n```")
    assert mixed.sql == "SELECT 6" and mixed.fenced


@pytest.mark.parametrize(
    "sql,n",
    [
        ("SELECT 1", 1),
        ("SELECT 1;", 1),
        ("SELECT 1; -- trailing comment", 1),
        ("SELECT ';' FROM t", 1),
        ('SELECT "a;b" FROM t', 1),
        ("SELECT 1 /* ; */", 1),
        ("SELECT 1; SELECT 2", 2),
        ("SELECT 1;\nDROP TABLE t;", 2),
        ("  ;;  ", 0),
        ("-- only a comment", 0),
    ],
)
def test_statement_count_respects_quotes_and_comments(sql, n):
    assert len(statements(sql)) == n


def test_leading_keyword_skips_comments_and_parentheses():
    assert leading_keyword("/* hi */ -- x\n (select 1)") == "SELECT"
    assert leading_keyword("with x as (select 1) select * from x") == "WITH"
    assert leading_keyword("'text'") == ""


@pytest.mark.parametrize(
    "sql,ordered",
    [
        ("SELECT a FROM t ORDER BY a", True),
        ("select a from t order\n  by a desc limit 3", True),
        ("SELECT a FROM t", False),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a)", False),
        ("WITH x AS (SELECT a FROM t ORDER BY a LIMIT 2) SELECT a FROM x", False),
        ("SELECT a, RANK() OVER (ORDER BY a) FROM t", False),
        ("SELECT 'ORDER BY' FROM t", False),
        ("SELECT a FROM t -- ORDER BY a", False),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", True),
    ],
)
def test_top_level_order_by(sql, ordered):
    assert orders_at_top_level(sql) is ordered


def test_quote_literal():
    assert quote_literal("O'Brien") == "'O''Brien'"
    assert quote_literal(3) == "3" and quote_literal(2.5) == "2.5" and quote_literal(None) == "NULL"
