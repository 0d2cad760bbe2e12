#include "core/front.h"

namespace wick {

Tensor Tensor::conv1d(const Tensor& w, const Conv1dParams& p) const { throw UnsupportedError("[conv1d] front end not written yet"); }
Tensor Tensor::conv2d(const Tensor& w, const Conv2dParams& p) const { throw UnsupportedError("[conv2d] front end not written yet"); }
Tensor Tensor::conv_transpose1d(const Tensor& w, const Conv1dParams& p) const { throw UnsupportedError("[conv_transpose1d] front end not written yet"); }
Tensor Tensor::conv_transpose2d(const Tensor& w, const Conv2dParams& p) const { throw UnsupportedError("[conv_transpose2d] front end not written yet"); }
Tensor Tensor::avg_pool2d(const Pool2dParams& p) const { throw UnsupportedError("[avg_pool2d] front end not written yet"); }
Tensor Tensor::max_pool2d(const Pool2dParams& p) const { throw UnsupportedError("[max_pool2d] front end not written yet"); }
Tensor Tensor::upsample_nearest1d(int64_t out_len) const { throw UnsupportedError("[upsample_nearest1d] front end not written yet"); }
Tensor Tensor::upsample_nearest2d(int64_t out_h, int64_t out_w) const { throw UnsupportedError("[upsample_nearest2d] front end not written yet"); }
Tensor Tensor::upsample_bilinear2d(int64_t out_h, int64_t out_w, bool align_corners) const { throw UnsupportedError("[upsample_bilinear2d] front end not written yet"); }
Tensor rope(const Tensor&, const Tensor&, const Tensor&) { throw UnsupportedError("[rope] not written yet"); }
Tensor rope_i(const Tensor&, const Tensor&, const Tensor&) { throw UnsupportedError("[rope_i] not written yet"); }

}  // namespace wick
