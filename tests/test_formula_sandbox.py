"""Value formulas: what a formula can reach besides numbers (files, the weights, non-scalars) is refused up front.

Hostile value formulas (audit): what a formula can reach besides numbers is refused up front.

Before: ``v.dump(path)`` / ``v.tofile(path)`` wrote a file on the server, ``minimum(v, 0, out=v)``
overwrote the caller's weights, ``sqrt(v, where=False)`` read uninitialized memory, and a formula
that is not one number per set (``exp(v)``, ``1j``, ``f'x'``) escaped as a bare ValueError /
TypeError (a traceback in the app)."""
import numpy as np
import pytest

from favmac.functions import FormulaError, FormulaValue

ALL = np.ones((1, 3), dtype=bool)


@pytest.mark.parametrize("formula", ["v.dump({path!r})", "sum_hits(v) + 0 * v.tofile({path!r})"])
def test_attribute_access_cannot_write_files(tmp_path, formula):
    target = tmp_path / "written"
    with pytest.raises(FormulaError, match="attribute access"):
        FormulaValue(formula.format(path=str(target)), weights=[1.0, 2.0, 3.0])
    assert not target.exists()


@pytest.mark.parametrize("formula", ["sum_hits(minimum(v, 0, out=v)) + 1", "sum_hits(exp(v, out=v))",
                                     "sum_hits(v) + 0 * sum_hits(maximum(v, 0, v))", "sum_hits(v) + v.fill(0)"])
def test_a_formula_cannot_overwrite_the_weights(formula):
    weights = np.array([1.0, 2.0, 3.0])
    try:
        value = FormulaValue(formula, weights=weights)
        value(ALL, ALL)
    except FormulaError:
        pass
    assert weights.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(FormulaError):
        FormulaValue(formula, weights=weights)


@pytest.mark.parametrize("formula, words", [("sum_hits(sqrt(v, where=False))", "sqrt() takes exactly 1 argument"),
                                            ("sum_hits(v, v)", "sum_hits() takes exactly 1 argument"),
                                            ("minimum(n_hits)", "minimum() takes exactly 2 arguments"),
                                            ("sum_hits(*v)", "sum_hits() takes exactly 1 argument")])
def test_documented_functions_take_their_arguments_only(formula, words):
    with pytest.raises(FormulaError, match=words.replace("(", r"\(").replace(")", r"\)")):
        FormulaValue(formula, weights=[1.0, 2.0, 3.0])


@pytest.mark.parametrize("formula", ["v", "exp(v)", "1j", "f'x'", "b'x'", "'a' < 'b'", "sum_hits(1j * v)"])
def test_not_one_number_per_set_is_a_formula_error(formula):
    with pytest.raises(FormulaError):
        FormulaValue(formula, weights=[1.0, 2.0, 3.0])


@pytest.mark.parametrize("formula", ["prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)", "sum_hits(v)[0] + v[1]",
                                     "maximum(sum_hits(v), 1) + minimum(n_hits, 2)", "sum_hits(v) > 1"])
def test_ordinary_formulas_still_work(formula):
    value = FormulaValue(formula, weights=[1.0, 2.0, 3.0])
    assert np.isfinite(value(ALL, ALL)).all()
