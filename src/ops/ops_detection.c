/* ops_detection.c - the parts of torchvision 0.14's two-stage detectors
 * (torchvision/models/detection/, torchvision/ops/) that no other op
 * describes: the frozen batch norm of their backbones, the RPN's anchors,
 * proposals and loss, the RoI heads' sampling, MultiScaleRoIAlign and
 * fastrcnn_loss, in training mode (models/fasterrcnn_resnet50_fpn.json).
 *
 * Detection models are data-dependent: how many proposals survive NMS, how
 * many sampled anchors and RoIs are positive. Those counts are arguments
 * here (per image; the batch is --batch), which a model file sets from
 * documented variables. Everything computed under torch.no_grad() or on
 * detached tensors (anchors, box decoding, NMS, target matching and
 * encoding, sampling) saves nothing and has no gradient: its outputs are
 * declared without grad, and its Python locals alive together are the op's
 * forward workspace, counted from the code named at each op (index tensors
 * int64, boxes in the features' dtype). What autograd saves was measured
 * under PyTorch 1.13 / torchvision 0.14 and 2.6 / 0.21, the same in both
 * (tests/tools/frcnn_figures.py, tests/reference/frcnn_figures*.json;
 * per op: tests/reference/saved_tensors_catalog.md), except the 0-d
 * wrapped number that `loss / n` saves in 1.13, which stays on the CPU
 * under CUDA and is not counted (tests/tools/torch_figures.py's
 * wrapped_scalar_cpu). Under autocast the losses' small saved tensors keep
 * their inputs' dtype here, where PyTorch's float32 autocast of
 * smooth_l1_loss, binary_cross_entropy_with_logits and log_softmax saves
 * float32 copies (a few kilobytes for the default counts). */
#include "ops_common.h"

/* Fails unless input i has `ndim` dims and, when last >= 0, last dim `last`. */
static int need_dims(struct memest_ictx *c, int i, int ndim, int64_t last, const char *what)
{
    const struct memest_shape *s = memest_in_shape(c, i);
    if (s->ndim != ndim || (last >= 0 && s->size[ndim - 1] != last))
        return memest_fail(c, "input %d: expects %s, got %s", i + 1, what, IN_STR(c, i));
    return 0;
}

/* The bytes of n values of type dt, saturating. */
static uint64_t vals(uint64_t n, enum memest_dtype dt)
{
    return memest_sat_mul(n, memest_dtype_size(dt));
}

/* ---- frozenbatchnorm2d ----
 * torchvision.ops.FrozenBatchNorm2d: weight, bias, running_mean and
 * running_var are buffers [C] (no parameters); forward:
 *     scale = w * (rv + eps).rsqrt(); bias = b - rm * scale   # [1, C, 1, 1]
 *     return x * scale + bias
 * x * scale saves scale (MulBackward0's other: a new [1, C, 1, 1] tensor;
 * x is not saved, scale not requiring grad); the add saves nothing. The
 * product is a temporary of the input's size, freed after the add. */

enum { FB_NUM_FEATURES, FB_EPS };

static const struct memest_argspec frozenbn_args[] = {
    [FB_NUM_FEATURES] = {"num_features", MEMEST_ARG_INT, .optional = true, .lo = 1,
                         .hi = ARG_MAX, .doc = "channels C (inferred; checked when given)"},
    [FB_EPS] = {"eps", MEMEST_ARG_FLOAT, .fdef = 1e-5},
};

static int infer_frozenbn(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    if (s.ndim != 4)
        return memest_fail(c, "expects a 4-D (N, C, H, W) input, got %s", IN_STR(c, 0));
    if (need_float(c, 0) != 0)
        return -1;
    int64_t ch = s.size[1];
    const struct memest_argval *nf = memest_arg(c, FB_NUM_FEATURES);
    if (!nf->none && nf->v[0] != ch)
        return memest_fail(c, "num_features is %lld but the input has %lld channels",
                           (long long)nf->v[0], (long long)ch);
    enum memest_dtype dt = memest_in_dtype(c, 0), f = memest_float_dtype(c);
    static const char *const bufs[] = {"weight", "bias", "running_mean", "running_var"};
    for (int i = 0; i < 4; i++)
        if (memest_buffer(c, bufs[i], 1, &ch, f) != 0)
            return -1;
    int64_t sc[4] = {1, ch, 1, 1};
    uint64_t n;
    if (!memest_numel(c, s.ndim, s.size, &n) || memest_out_like(c, &s, 0, dt) < 0 ||
        save_new_if(c, 4, sc, dt) != 0)
        return -1;
    memest_workspace(c, vals(n, dt));
    return 0;
}

/* ---- rpnhead ----
 * models/detection/rpn.py RPNHead(in_channels, num_anchors, conv_depth=1),
 * one module applied to every feature map (its parameters shared by the
 * levels): per level
 *     t = self.conv(feature)   # conv_depth x Conv2dNormActivation: conv 3x3
 *                              # (bias) + ReLU(inplace=True)
 *     logits.append(self.cls_logits(t))   # conv 1x1 to num_anchors
 *     bbox_reg.append(self.bbox_pred(t))  # conv 1x1 to num_anchors * 4
 * Inputs: the feature maps; outputs 0 .. L-1 the objectness logits
 * [N, num_anchors, h, w] and L .. 2L-1 the box regressions
 * [N, 4 * num_anchors, h, w] of the L levels. Saved per level (as
 * nn.Conv2d and ReLU do): the feature map (the first conv's input) and
 * each conv's ReLU'd output t (the relu's result, read by the next conv
 * and by both 1x1 convs). MACs: the convolutions'. The backward's
 * scratch: the gradient of t from the two 1x1 convs (accumulated) and the
 * relu's, at most two of the largest level's t. */

enum { RH_IN, RH_NUM_ANCHORS, RH_DEPTH };
#define RH_MAX_DEPTH 4 /* torchvision uses 1 (v1) and 2 (fasterrcnn_resnet50_fpn_v2) */

static const struct memest_argspec rpnhead_args[] = {
    [RH_IN] = {"in_channels", MEMEST_ARG_INT, .optional = true, .lo = 1, .hi = ARG_MAX,
               .doc = "channels C (inferred; checked when given)"},
    [RH_NUM_ANCHORS] = {"num_anchors", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
    [RH_DEPTH] = {"conv_depth", MEMEST_ARG_INT, .lo = 1, .hi = RH_MAX_DEPTH, .idef = 1},
};

static int infer_rpnhead(struct memest_ictx *c)
{
    int nin = memest_in_count(c);
    int64_t C = memest_in_shape(c, 0)->size[1], A = memest_arg_int(c, RH_NUM_ANCHORS);
    int64_t depth = memest_arg_int(c, RH_DEPTH), A4;
    const struct memest_argval *ic = memest_arg(c, RH_IN);
    if (!mul_i64(A, 4, &A4))
        return memest_fail(c, "num_anchors is too large");
    for (int i = 0; i < nin; i++) {
        if (need_dims(c, i, 4, -1, "a feature map (N, C, h, w)") != 0 || need_float(c, i) != 0)
            return -1;
        if (memest_in_shape(c, i)->size[1] != C || (!ic->none && ic->v[0] != C))
            return memest_fail(c, "input %d: %s, expected %lld channels", i + 1, IN_STR(c, i),
                               (long long)(ic->none ? C : ic->v[0]));
    }
    int64_t w3[4] = {C, C, 3, 3}, wc[4] = {A, C, 1, 1}, wb[4] = {A4, C, 1, 1};
    static const char *const names[RH_MAX_DEPTH][2] = {
        {"conv.0.0.weight", "conv.0.0.bias"}, {"conv.1.0.weight", "conv.1.0.bias"},
        {"conv.2.0.weight", "conv.2.0.bias"}, {"conv.3.0.weight", "conv.3.0.bias"}};
    for (int64_t d = 0; d < depth; d++)
        if (memest_param(c, names[d][0], 4, w3) != 0 || memest_param(c, names[d][1], 1, &C) != 0)
            return -1;
    if (memest_param(c, "cls_logits.weight", 4, wc) != 0 ||
        memest_param(c, "cls_logits.bias", 1, &A) != 0 ||
        memest_param(c, "bbox_pred.weight", 4, wb) != 0 ||
        memest_param(c, "bbox_pred.bias", 1, &A4) != 0)
        return -1;
    bool train = memest_param_trainable(c, "cls_logits.weight");
    enum memest_dtype dt = memest_in_dtype(c, 0);
    double fwd = 0, bwd = 0;
    uint64_t tmax = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nin; i++) {
            const struct memest_shape s = *memest_in_shape(c, i);
            int64_t o[4] = {s.size[0], pass ? A4 : A, s.size[2], s.size[3]};
            if (memest_out_new(c, 4, o, dt) < 0)
                return -1;
        }
    for (int i = 0; i < nin; i++) {
        const struct memest_shape s = *memest_in_shape(c, i);
        double pos = (double)s.size[0] * (double)s.size[2] * (double)s.size[3];
        double f3 = pos * (double)C * (double)C * 9, f1 = pos * (double)(A + A4) * (double)C;
        fwd += f3 * (double)depth + f1;
        bwd += f3 * ((memest_in_requires_grad(c, i) ? 1 : 0) + (train ? 1 : 0)) +
               (f3 * (double)(depth - 1) + f1) * (train ? 2 : 1);
        if (memest_save_in(c, i) != 0 || save_new_if(c, 4, s.size, dt) != 0)
            return -1;
        uint64_t tb = sat_bytes(4, s.size, dt);
        tmax = tb > tmax ? tb : tmax;
    }
    memest_macs(c, fwd);
    memest_macs_bwd(c, bwd);
    memest_bwd_workspace(c, memest_sat_mul(tmax, 2));
    return 0;
}

/* ---- anchorgenerator ----
 * models/detection/anchor_utils.py AnchorGenerator(sizes, aspect_ratios):
 * per feature map of h x w, num_anchors_per_location() anchors at each
 * position; grid_anchors() makes the anchors of every level once ([h*w*a,
 * 4] each, kept in a list), then each image gets their torch.cat: the
 * output [N, A, 4] (torchvision: a list of N tensors [A, 4]) with A the sum
 * of h*w*a, in the first feature map's dtype. Inputs: the image batch (for
 * the strides), then the feature maps. */

enum { AG_PER_LOC };

static const struct memest_argspec anchorgen_args[] = {
    [AG_PER_LOC] = {"num_anchors_per_location", MEMEST_ARG_INT, .lo = 1, .hi = ARG_MAX, .idef = 3,
                    .doc = "len(sizes[i]) * len(aspect_ratios[i]), the same on every level"},
};

static int infer_anchorgen(struct memest_ictx *c)
{
    int nin = memest_in_count(c);
    if (need_dims(c, 0, 4, -1, "the image batch (N, C, H, W)") != 0)
        return -1;
    int64_t N = memest_in_shape(c, 0)->size[0], per = memest_arg_int(c, AG_PER_LOC), A = 0;
    for (int i = 1; i < nin; i++) {
        const struct memest_shape *s = memest_in_shape(c, i);
        if (need_dims(c, i, 4, -1, "a feature map (N, C, h, w)") != 0)
            return -1;
        if (s->size[0] != N)
            return memest_fail(c, "input %d: batch %lld, the images have %lld", i + 1,
                               (long long)s->size[0], (long long)N);
        int64_t lvl;
        if (!mul_i64(s->size[2], s->size[3], &lvl) || !mul_i64(lvl, per, &lvl) ||
            __builtin_add_overflow(A, lvl, &A))
            return memest_fail(c, "too many anchors");
    }
    enum memest_dtype dt = memest_in_dtype(c, 1);
    int64_t out[3] = {N, A, 4};
    if (memest_out_new(c, 3, out, dt) < 0)
        return -1;
    memest_out_set_requires_grad(c, 0, false);
    for (int i = 0; i < nin; i++)
        memest_grad_none(c, i);
    memest_workspace(c, sat_bytes(2, out + 1, dt)); /* the levels' anchors */
    return 0;
}

/* Checks an RPN head's flattened outputs against the anchors: objectness
 * [N*A, 1] (or [N*A]), pred_bbox_deltas [N*A, 4], anchors [N, A, 4]. Puts
 * N*A in *m and A in *a. */
static int rpn_inputs(struct memest_ictx *c, int64_t *m, int64_t *a)
{
    const struct memest_shape *o = memest_in_shape(c, 0), *an = memest_in_shape(c, 2);
    if ((o->ndim != 1 && o->ndim != 2) || (o->ndim == 2 && o->size[1] != 1))
        return memest_fail(c, "input 1: expects the objectness [N*A, 1], got %s", IN_STR(c, 0));
    if (need_dims(c, 1, 2, 4, "the box deltas [N*A, 4]") != 0 ||
        need_dims(c, 2, 3, 4, "the anchors [N, A, 4]") != 0)
        return -1;
    int64_t na;
    if (!mul_i64(an->size[0], an->size[1], &na) || na != o->size[0] ||
        memest_in_shape(c, 1)->size[0] != na)
        return memest_fail(c, "objectness %s and box deltas %s do not match the anchors %s",
                           IN_STR(c, 0), IN_STR(c, 1), IN_STR(c, 2));
    *m = na;
    *a = an->size[1];
    return 0;
}

/* ---- filter_proposals ----
 * RegionProposalNetwork.forward (models/detection/rpn.py), after the head:
 *     proposals = self.box_coder.decode(pred_bbox_deltas.detach(), anchors)
 *     boxes, scores = self.filter_proposals(proposals, objectness, ...)
 * decode: torch.cat(anchors) and BoxCoder.decode_single's locals (widths,
 * heights, ctr_x, ctr_y [M]; dx, dy, dw, dh, pred_ctr_x, pred_ctr_y,
 * pred_w, pred_h, c_to_c_h, c_to_c_w, pred_boxes1..4 [M, 1]: 22 values per
 * anchor besides the cat's 4) alive until it returns its [M, 4] result;
 * filter_proposals: the top pre_nms_top_n per level and image, clipping,
 * small-box and score filtering, batched_nms per level, then the first
 * post_nms_top_n kept: the output [N, num_proposals, 4] (a list of N
 * tensors in torchvision). The level ids [A] int64 live alongside. */

enum { FP_PRE, FP_POST, FP_NUM };

static const struct memest_argspec filterprop_args[] = {
    [FP_PRE] = {"pre_nms_top_n", MEMEST_ARG_INT, .lo = 1, .hi = ARG_MAX, .idef = 2000,
                .doc = "per level and image (training default)"},
    [FP_POST] = {"post_nms_top_n", MEMEST_ARG_INT, .lo = 1, .hi = ARG_MAX, .idef = 2000,
                 .doc = "per image (training default)"},
    [FP_NUM] = {"num_proposals", MEMEST_ARG_INT, .optional = true, .lo = 0, .hi = ARG_MAX,
                .doc = "data-dependent: the proposals NMS keeps per image (default post_nms_top_n)"},
};

static int infer_filterprop(struct memest_ictx *c)
{
    int64_t m, a;
    if (rpn_inputs(c, &m, &a) != 0 || need_float(c, 1) != 0)
        return -1;
    int64_t post = memest_arg_int(c, FP_POST);
    const struct memest_argval *np = memest_arg(c, FP_NUM);
    int64_t keep = np->none ? post : np->v[0];
    if (keep > post || keep > a)
        return memest_fail(c, "num_proposals %lld: at most post_nms_top_n (%lld) and the anchors "
                           "per image (%lld)", (long long)keep, (long long)post, (long long)a);
    enum memest_dtype dt = memest_in_dtype(c, 1);
    int64_t out[3] = {memest_in_shape(c, 2)->size[0], keep, 4};
    if (memest_out_new(c, 3, out, dt) < 0)
        return -1;
    memest_out_set_requires_grad(c, 0, false);
    for (int i = 0; i < 3; i++)
        memest_grad_none(c, i);
    memest_workspace(c, memest_sat_add(vals(memest_sat_mul((uint64_t)m, 4 + 22 + 4), dt),
                                       vals((uint64_t)a, MEMEST_I64)));
    return 0;
}

/* Per-image sample counts of a BalancedPositiveNegativeSampler
 * (models/detection/_utils.py): at most int(batch_size_per_image *
 * positive_fraction) positives, at most batch_size_per_image samples in
 * all. The counts are data-dependent; unset, the most. */
struct sampled {
    int64_t pos, all;
};
static int sampler_counts(struct memest_ictx *c, int bspi, int frac, int npos, int nall,
                          struct sampled *s)
{
    int64_t b = memest_arg_int(c, bspi);
    int64_t maxpos = (int64_t)((double)b * memest_arg_float(c, frac));
    const struct memest_argval *p = memest_arg(c, npos), *a = memest_arg(c, nall);
    s->pos = p->none ? maxpos : p->v[0];
    s->all = a->none ? b : a->v[0];
    if (s->pos > maxpos)
        return memest_fail(c, "num_positive %lld: the sampler takes at most "
                           "int(batch_size_per_image * positive_fraction) = %lld",
                           (long long)s->pos, (long long)maxpos);
    if (s->all > b || s->all < s->pos)
        return memest_fail(c, "num_sampled %lld: between num_positive (%lld) and "
                           "batch_size_per_image (%lld)", (long long)s->all, (long long)s->pos,
                           (long long)b);
    return 0;
}

#define SAMPLER_ARGS(B, F, DOCB)                                                                 \
    {"batch_size_per_image", MEMEST_ARG_INT, .lo = 1, .hi = ARG_MAX, .idef = B, .doc = DOCB},  \
        {"positive_fraction", MEMEST_ARG_FLOAT, .fdef = F, .flo = 0, .fhi = 1},                 \
        {"num_positive", MEMEST_ARG_INT, .optional = true, .lo = 0, .hi = ARG_MAX,              \
         .doc = "data-dependent: positives sampled per image (default: the most)"},             \
        {"num_sampled", MEMEST_ARG_INT, .optional = true, .lo = 0, .hi = ARG_MAX,               \
         .doc = "data-dependent: samples per image (default batch_size_per_image)"}

/* ---- rpn_compute_loss ----
 * RegionProposalNetwork.forward, training: assign_targets_to_anchors
 * (labels [A] float and matched boxes [A, 4] per image), box_coder.encode
 * ([N*A, 4]), then compute_loss(objectness, pred_bbox_deltas, labels,
 * regression_targets):
 *     sampled_pos_inds = torch.where(torch.cat(sampled_pos_inds))[0]     # [P]
 *     sampled_inds = torch.cat([sampled_pos_inds, sampled_neg_inds])    # [S]
 *     labels = torch.cat(labels); regression_targets = torch.cat(...)
 *     box_loss = F.smooth_l1_loss(pred_bbox_deltas[sampled_pos_inds],
 *         regression_targets[sampled_pos_inds], beta=1/9, reduction="sum")
 *         / sampled_inds.numel()
 *     objectness_loss = F.binary_cross_entropy_with_logits(
 *         objectness[sampled_inds], labels[sampled_inds])
 * Saved (PyTorch 1.13, measured): the index tensors [P] and [S] int64
 * (IndexBackward0), the indexed deltas and targets [P, 4]
 * (SmoothL1LossBackward0), the indexed objectness and labels [S]
 * (BinaryCrossEntropyWithLogitsBackward0). Outputs: 0 = loss_objectness,
 * 1 = loss_rpn_box_reg (0-d). Workspace: the labels, matched boxes,
 * regression targets and their torch.cat copies (14 values per anchor). */

enum { RL_BSPI, RL_FRAC, RL_NPOS, RL_NALL };

static const struct memest_argspec rpnloss_args[] = {
    SAMPLER_ARGS(256, 0.5, "RPN fg_bg_sampler (rpn_batch_size_per_image)"),
};

/* The two 0-d losses, requiring grad when the predictions do. */
static int two_losses(struct memest_ictx *c, enum memest_dtype dt)
{
    return memest_out_new(c, 0, NULL, dt) < 0 || memest_out_new(c, 0, NULL, dt) < 0 ? -1 : 0;
}

static int infer_rpnloss(struct memest_ictx *c)
{
    int64_t m, a;
    struct sampled s;
    if (rpn_inputs(c, &m, &a) != 0 || need_float(c, 0) != 0 || need_float(c, 1) != 0 ||
        sampler_counts(c, RL_BSPI, RL_FRAC, RL_NPOS, RL_NALL, &s) != 0)
        return -1;
    if (s.all > a)
        return memest_fail(c, "num_sampled %lld: more than the %lld anchors per image",
                           (long long)s.all, (long long)a);
    int64_t N = memest_in_shape(c, 2)->size[0], P, S;
    if (!mul_i64(N, s.pos, &P) || !mul_i64(N, s.all, &S))
        return memest_fail(c, "too many samples");
    int64_t p4[2] = {P, 4};
    enum memest_dtype dt = memest_in_dtype(c, 1), ot = memest_in_dtype(c, 0);
    if (two_losses(c, dt) != 0 || save_new_if(c, 1, &P, MEMEST_I64) != 0 ||
        save_new_if(c, 2, p4, dt) != 0 || save_new_if(c, 2, p4, dt) != 0 ||
        save_new_if(c, 1, &S, MEMEST_I64) != 0 || save_new_if(c, 1, &S, ot) != 0 ||
        save_new_if(c, 1, &S, ot) != 0)
        return -1;
    memest_grad_none(c, 2);
    memest_workspace(c, vals(memest_sat_mul((uint64_t)m, 14), dt));
    return 0;
}

/* ---- select_training_samples ----
 * RoIHeads.select_training_samples (models/detection/roi_heads.py), under
 * no gradient: the ground-truth boxes appended to each image's proposals,
 * matched and sampled (fg_bg_sampler: batch_size_per_image 512, positive
 * fraction 0.25), the sampled boxes' regression targets encoded. Outputs:
 * 0 = the sampled proposals [N*S, 4] (torchvision: a list of [S, 4]),
 * 1 = their labels [N*S] int64, 2 = their regression targets [N*S, 4]
 * (fastrcnn_loss concatenates the per-image labels and targets: the same
 * bytes as one tensor). The proposals with the ground truth appended are
 * the workspace. */

enum { ST_BSPI, ST_FRAC, ST_NPOS, ST_NALL };

static const struct memest_argspec selectsamples_args[] = {
    SAMPLER_ARGS(512, 0.25, "RoI heads' fg_bg_sampler (box_batch_size_per_image)"),
};

static int infer_selectsamples(struct memest_ictx *c)
{
    struct sampled s;
    if (need_dims(c, 0, 3, 4, "the proposals [N, P, 4]") != 0 || need_float(c, 0) != 0 ||
        sampler_counts(c, ST_BSPI, ST_FRAC, ST_NPOS, ST_NALL, &s) != 0)
        return -1;
    const struct memest_shape in = *memest_in_shape(c, 0);
    int64_t K;
    if (!mul_i64(in.size[0], s.all, &K))
        return memest_fail(c, "too many samples");
    int64_t k4[2] = {K, 4};
    enum memest_dtype dt = memest_in_dtype(c, 0);
    if (memest_out_new(c, 2, k4, dt) < 0 || memest_out_new(c, 1, &K, MEMEST_I64) < 0 ||
        memest_out_new(c, 2, k4, dt) < 0)
        return -1;
    for (int k = 0; k < 3; k++)
        memest_out_set_requires_grad(c, k, false);
    memest_grad_none(c, 0);
    memest_workspace(c, sat_bytes(in.ndim, in.size, dt));
    return 0;
}

/* ---- multiscaleroialign ----
 * torchvision.ops.MultiScaleRoIAlign(featmap_names, output_size,
 * sampling_ratio) (ops/poolers.py _multiscale_roi_align): inputs the
 * feature maps of the pooled levels (its featmap_names, in order), then the
 * boxes [K, 4]. rois = [batch index, box] [K, 5]; with one level,
 * roi_align(x, rois) is the output. With several, the LevelMapper's levels
 * [K] int64 and result = torch.zeros(K, C, oh, ow); per level:
 *     idx_in_level = torch.where(levels == level)[0]
 *     rois_per_level = rois[idx_in_level]
 *     result[idx_in_level] = roi_align(feature, rois_per_level, ...)
 * roi_align's autograd function (csrc/ops/autograd/roi_align_kernel.cpp)
 * saves rois_per_level; index_put_ (IndexPutBackward0) saves idx_in_level:
 * [K, 5] and [K] int64 over the levels, whichever level each RoI maps to.
 * MACs: none (bilinear sampling). Workspace: rois, levels and one level's
 * roi_align output, at most all K RoIs (an upper bound: the split over the
 * levels depends on the boxes' sizes). */

enum { RA_OUTPUT_SIZE, RA_SAMPLING };

static const struct memest_argspec roialign_args[] = {
    [RA_OUTPUT_SIZE] = {"output_size", MEMEST_ARG_INTS, .required = true, .n = 2, .lo = 1,
                        .hi = ARG_MAX},
    [RA_SAMPLING] = {"sampling_ratio", MEMEST_ARG_INT, .required = true, .lo = -1,
                     .hi = ARG_MAX, .doc = "-1 or 0: adaptive"},
};

static int infer_roialign(struct memest_ictx *c)
{
    int nin = memest_in_count(c), nmaps = nin - 1;
    if (need_dims(c, nmaps, 2, 4, "the boxes [K, 4] last") != 0)
        return -1;
    const struct memest_shape f0 = *memest_in_shape(c, 0);
    for (int i = 0; i < nmaps; i++) {
        const struct memest_shape *s = memest_in_shape(c, i);
        if (need_dims(c, i, 4, -1, "a feature map (N, C, h, w)") != 0 || need_float(c, i) != 0)
            return -1;
        if (s->size[0] != f0.size[0] || s->size[1] != f0.size[1])
            return memest_fail(c, "input %d: %s, the first feature map is %s", i + 1,
                               IN_STR(c, i), IN_STR(c, 0));
    }
    const int64_t *os = memest_arg(c, RA_OUTPUT_SIZE)->v;
    int64_t K = memest_in_shape(c, nmaps)->size[0], out[4] = {K, f0.size[1], os[0], os[1]};
    int64_t r5[2] = {K, 5};
    enum memest_dtype dt = memest_in_dtype(c, 0);
    uint64_t n;
    if (!memest_numel(c, 4, out, &n) || memest_out_new(c, 4, out, dt) < 0 ||
        save_new_if(c, 2, r5, memest_in_dtype(c, nmaps)) != 0 ||
        (nmaps > 1 && save_new_if(c, 1, &K, MEMEST_I64) != 0))
        return -1;
    memest_grad_none(c, nmaps);
    uint64_t ws = sat_bytes(2, r5, memest_in_dtype(c, nmaps));
    if (nmaps > 1)
        ws = memest_sat_add(ws, memest_sat_add(vals((uint64_t)K, MEMEST_I64), vals(n, dt)));
    memest_workspace(c, ws);
    return 0;
}

/* ---- fastrcnn_loss ----
 * models/detection/roi_heads.py fastrcnn_loss(class_logits, box_regression,
 * labels, regression_targets):
 *     classification_loss = F.cross_entropy(class_logits, labels)
 *     sampled_pos_inds_subset = torch.where(labels > 0)[0]              # [P]
 *     labels_pos = labels[sampled_pos_inds_subset]                      # [P]
 *     box_regression = box_regression.reshape(N, -1, 4)
 *     box_loss = F.smooth_l1_loss(
 *         box_regression[sampled_pos_inds_subset, labels_pos],
 *         regression_targets[sampled_pos_inds_subset], beta=1/9,
 *         reduction="sum") / labels.numel()
 * Saved (PyTorch 1.13, measured): log_softmax's result [K, C]
 * (LogSoftmaxBackward0; NllLossBackward0 saves it too, with the labels [K]
 * int64 and the 0-d total_weight), the two index tensors [P] int64
 * (IndexBackward0) and the indexed regression and targets [P, 4]
 * (SmoothL1LossBackward0). Inputs: the class logits [K, C], the box
 * regression [K, 4*C], labels [K] int64, regression targets [K, 4]; P is
 * --batch times num_positive. Outputs: 0 = loss_classifier, 1 =
 * loss_box_reg (0-d). */

enum { FL_NPOS };

static const struct memest_argspec fastrcnnloss_args[] = {
    [FL_NPOS] = {"num_positive", MEMEST_ARG_INT, .required = true, .lo = 0, .hi = ARG_MAX,
                 .doc = "data-dependent: positive RoIs per image"},
};

static int infer_fastrcnnloss(struct memest_ictx *c)
{
    if (need_dims(c, 0, 2, -1, "the class logits [K, C]") != 0 || need_float(c, 0) != 0 ||
        need_float(c, 1) != 0)
        return -1;
    int64_t K = memest_in_shape(c, 0)->size[0], C = memest_in_shape(c, 0)->size[1];
    const struct memest_shape *br = memest_in_shape(c, 1), *lb = memest_in_shape(c, 2);
    if (br->ndim != 2 || br->size[0] != K || br->size[1] % 4 != 0 || br->size[1] / 4 != C)
        return memest_fail(c, "input 2: expects the box regression [%lld, %lld], got %s",
                           (long long)K, (long long)(4 * C), IN_STR(c, 1));
    if (lb->ndim != 1 || lb->size[0] != K || memest_in_dtype(c, 2) != MEMEST_I64)
        return memest_fail(c, "input 3: expects the labels [%lld] int64, got %s %s", (long long)K,
                           IN_STR(c, 2), memest_dtype_name(memest_in_dtype(c, 2)));
    if (need_dims(c, 3, 2, 4, "the regression targets [K, 4]") != 0)
        return -1;
    int64_t P;
    if (!mul_i64(memest_batch(c), memest_arg_int(c, FL_NPOS), &P) || P > K)
        return memest_fail(c, "num_positive %lld per image: more than the %lld RoIs of the batch",
                           (long long)memest_arg_int(c, FL_NPOS), (long long)K);
    int64_t kc[2] = {K, C}, p4[2] = {P, 4};
    enum memest_dtype dt = memest_in_dtype(c, 0), bt = memest_in_dtype(c, 1);
    if (two_losses(c, dt) != 0 || save_new_if(c, 2, kc, dt) != 0 || memest_save_in(c, 2) != 0 ||
        save_new_if(c, 0, NULL, dt) != 0 || save_new_if(c, 1, &P, MEMEST_I64) != 0 ||
        save_new_if(c, 1, &P, MEMEST_I64) != 0 || save_new_if(c, 2, p4, bt) != 0 ||
        save_new_if(c, 2, p4, memest_in_dtype(c, 3)) != 0)
        return -1;
    memest_grad_none(c, 2);
    memest_grad_none(c, 3);
    return 0;
}

#define DET_OP(nm, lo, hi, argv, fn, text)                                                     \
    {                                                                                           \
        .name = nm, .min_in = lo, .max_in = hi, .args = argv, .nargs = NARGS(argv),            \
        .infer = fn, .doc = text,                                                               \
    }

const struct memest_op_desc memest_ops_detection[] = {
    {.name = "rpnhead", .min_in = 1, .max_in = -1, .args = rpnhead_args,
     .nargs = NARGS(rpnhead_args), .infer = infer_rpnhead, .amp = MEMEST_AMPP_LOW,
     .lib = MEMEST_LIB_CUDNN,
     .doc = "RPNHead on each feature map (shared parameters): outputs 0 .. L-1 the objectness "
            "logits, L .. 2L-1 the box regressions"},
    DET_OP("frozenbatchnorm2d", 1, 1, frozenbn_args, infer_frozenbn,
           "torchvision.ops.FrozenBatchNorm2d: x * scale + bias with fixed statistics (buffers)"),
    DET_OP("anchorgenerator", 2, -1, anchorgen_args, infer_anchorgen,
           "AnchorGenerator: the image batch and the feature maps to anchors [N, A, 4] (no grad)"),
    DET_OP("filter_proposals", 3, 3, filterprop_args, infer_filterprop,
           "RPN box decoding and filter_proposals: objectness [N*A, 1], box deltas [N*A, 4], "
           "anchors to proposals [N, num_proposals, 4] (no grad)"),
    DET_OP("rpn_compute_loss", 3, 3, rpnloss_args, infer_rpnloss,
           "RegionProposalNetwork target assignment and compute_loss: objectness, box deltas, "
           "anchors; outputs 0 = loss_objectness, 1 = loss_rpn_box_reg"),
    DET_OP("select_training_samples", 1, 1, selectsamples_args, infer_selectsamples,
           "RoIHeads.select_training_samples: proposals [N, P, 4]; outputs 0 = boxes [N*S, 4], "
           "1 = labels [N*S] int64, 2 = regression targets [N*S, 4] (no grad)"),
    DET_OP("multiscaleroialign", 2, -1, roialign_args, infer_roialign,
           "torchvision.ops.MultiScaleRoIAlign: the feature maps, then boxes [K, 4]; output "
           "[K, C, oh, ow]"),
    DET_OP("fastrcnn_loss", 4, 4, fastrcnnloss_args, infer_fastrcnnloss,
           "fastrcnn_loss: class logits [K, C], box regression [K, 4C], labels, regression "
           "targets; outputs 0 = loss_classifier, 1 = loss_box_reg"),
};
const int memest_ops_detection_count = NOPS(memest_ops_detection);
