#include "core/front.h"

namespace wick {

Tensor Tensor::affine(double mul, double add) const { throw UnsupportedError("[affine] front end not written yet"); }
Tensor Tensor::powf(double exponent) const { throw UnsupportedError("[powf] front end not written yet"); }
Tensor Tensor::elu(double alpha) const { throw UnsupportedError("[elu] front end not written yet"); }
Tensor Tensor::clamp(Scalar lo, Scalar hi) const { throw UnsupportedError("[clamp] front end not written yet"); }
Tensor Tensor::exp() const { throw UnsupportedError("[exp] front end not written yet"); }
Tensor Tensor::log() const { throw UnsupportedError("[log] front end not written yet"); }
Tensor Tensor::sin() const { throw UnsupportedError("[sin] front end not written yet"); }
Tensor Tensor::cos() const { throw UnsupportedError("[cos] front end not written yet"); }
Tensor Tensor::tanh() const { throw UnsupportedError("[tanh] front end not written yet"); }
Tensor Tensor::neg() const { throw UnsupportedError("[neg] front end not written yet"); }
Tensor Tensor::recip() const { throw UnsupportedError("[recip] front end not written yet"); }
Tensor Tensor::sqr() const { throw UnsupportedError("[sqr] front end not written yet"); }
Tensor Tensor::sqrt() const { throw UnsupportedError("[sqrt] front end not written yet"); }
Tensor Tensor::abs() const { throw UnsupportedError("[abs] front end not written yet"); }
Tensor Tensor::ceil() const { throw UnsupportedError("[ceil] front end not written yet"); }
Tensor Tensor::floor() const { throw UnsupportedError("[floor] front end not written yet"); }
Tensor Tensor::round() const { throw UnsupportedError("[round] front end not written yet"); }
Tensor Tensor::sign() const { throw UnsupportedError("[sign] front end not written yet"); }
Tensor Tensor::relu() const { throw UnsupportedError("[relu] front end not written yet"); }
Tensor Tensor::gelu() const { throw UnsupportedError("[gelu] front end not written yet"); }
Tensor Tensor::gelu_erf() const { throw UnsupportedError("[gelu_erf] front end not written yet"); }
Tensor Tensor::erf() const { throw UnsupportedError("[erf] front end not written yet"); }
Tensor Tensor::silu() const { throw UnsupportedError("[silu] front end not written yet"); }
Tensor Tensor::sigmoid() const { throw UnsupportedError("[sigmoid] front end not written yet"); }
Tensor Tensor::add(const Tensor& o) const { throw UnsupportedError("[add] front end not written yet"); }
Tensor Tensor::sub(const Tensor& o) const { throw UnsupportedError("[sub] front end not written yet"); }
Tensor Tensor::mul(const Tensor& o) const { throw UnsupportedError("[mul] front end not written yet"); }
Tensor Tensor::div(const Tensor& o) const { throw UnsupportedError("[div] front end not written yet"); }
Tensor Tensor::maximum(const Tensor& o) const { throw UnsupportedError("[maximum] front end not written yet"); }
Tensor Tensor::minimum(const Tensor& o) const { throw UnsupportedError("[minimum] front end not written yet"); }
Tensor Tensor::pow(const Tensor& o) const { throw UnsupportedError("[pow] front end not written yet"); }
Tensor Tensor::eq(const Tensor& o) const { throw UnsupportedError("[eq] front end not written yet"); }
Tensor Tensor::ne(const Tensor& o) const { throw UnsupportedError("[ne] front end not written yet"); }
Tensor Tensor::lt(const Tensor& o) const { throw UnsupportedError("[lt] front end not written yet"); }
Tensor Tensor::le(const Tensor& o) const { throw UnsupportedError("[le] front end not written yet"); }
Tensor Tensor::gt(const Tensor& o) const { throw UnsupportedError("[gt] front end not written yet"); }
Tensor Tensor::ge(const Tensor& o) const { throw UnsupportedError("[ge] front end not written yet"); }
Tensor Tensor::where_cond(const Tensor& on_true, const Tensor& on_false) const { throw UnsupportedError("[where_cond] front end not written yet"); }

}  // namespace wick
