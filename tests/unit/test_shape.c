/* test_shape.c - strides, views and broadcasting, checked against what
 * PyTorch does (each case notes the PyTorch expression). */
#include "check.h"
#include "memest/shape.h"

static struct memest_shape mk(int n, const int64_t *size)
{
    struct memest_shape s;
    memest_shape_set(&s, n, size);
    return s;
}

/* x.permute(p) of x */
static struct memest_shape permute(const struct memest_shape *x, const int *p)
{
    struct memest_shape s = *x;
    for (int i = 0; i < x->ndim; i++) {
        s.size[i] = x->size[p[i]];
        s.stride[i] = x->stride[p[i]];
    }
    return s;
}

int main(void)
{
    /* torch.empty(2,3,4).stride() == (12, 4, 1) */
    struct memest_shape a = mk(3, (int64_t[]){2, 3, 4});
    CHECK_EQ_INT(a.stride[0], 12);
    CHECK_EQ_INT(a.stride[1], 4);
    CHECK_EQ_INT(a.stride[2], 1);
    CHECK(memest_shape_is_contiguous(&a));
    uint64_t n;
    CHECK(memest_shape_numel(&a, &n));
    CHECK_EQ_U64(n, 24);

    /* q = x.view(B,s,h,d).permute(0,2,1,3): q.reshape(B*h, s, d) must copy */
    struct memest_shape x = mk(4, (int64_t[]){2, 5, 3, 4});
    struct memest_shape q = permute(&x, (int[]){0, 2, 1, 3});
    CHECK(!memest_shape_is_contiguous(&q));
    CHECK(memest_shape_is_dense(&q));
    struct memest_shape to = mk(3, (int64_t[]){6, 5, 4});
    CHECK(!memest_shape_view_strides(&q, &to));

    /* t = y.transpose(-1,-2) of contiguous y[6,5,4]: t.reshape(6,4,5) is a view */
    struct memest_shape y = mk(3, (int64_t[]){6, 5, 4});
    struct memest_shape t = permute(&y, (int[]){0, 2, 1});
    struct memest_shape to2 = mk(3, (int64_t[]){6, 4, 5});
    CHECK(memest_shape_view_strides(&t, &to2));
    CHECK_EQ_INT(to2.stride[0], 20);
    CHECK_EQ_INT(to2.stride[1], 1);
    CHECK_EQ_INT(to2.stride[2], 4);

    /* contiguous [2,5,768].view(10, 768) is a view; .view(2,5,12,64) too */
    struct memest_shape h = mk(3, (int64_t[]){2, 5, 768});
    struct memest_shape v1 = mk(2, (int64_t[]){10, 768});
    CHECK(memest_shape_view_strides(&h, &v1));
    struct memest_shape v2 = mk(4, (int64_t[]){2, 5, 12, 64});
    CHECK(memest_shape_view_strides(&h, &v2));
    CHECK_EQ_INT(v2.stride[0], 3840);

    /* a slice x[:, :, 0:768] of [2,5,2304] viewed as [2,5,12,64] is a view
     * (GPT-2's split then view) */
    struct memest_shape qkv = mk(3, (int64_t[]){2, 5, 2304});
    struct memest_shape sl = qkv;
    sl.size[2] = 768;
    struct memest_shape v3 = mk(4, (int64_t[]){2, 5, 12, 64});
    CHECK(memest_shape_view_strides(&sl, &v3));
    CHECK_EQ_INT(v3.stride[1], 2304);

    /* empty_like(x) / x * c of a non-dense strided x keeps its dim order
     * (infer_dense_strides): x = qkv.view(2,5,3,3,4)[..., 0, :].transpose(1, 2)
     * ([2,3,5,4] strides (180,12,36,1)) gives strides (60,4,12,1); a dense
     * permuted x keeps its own strides */
    struct memest_shape f = mk(5, (int64_t[]){2, 5, 3, 3, 4});
    struct memest_shape sel = {.ndim = 4, .size = {2, 3, 5, 4}, .stride = {f.stride[0], f.stride[2], f.stride[1], 1}};
    CHECK(!memest_shape_is_dense(&sel));
    struct memest_shape like;
    memest_shape_like(&like, &sel);
    CHECK_EQ_INT(like.stride[0], 60);
    CHECK_EQ_INT(like.stride[1], 4);
    CHECK_EQ_INT(like.stride[2], 12);
    CHECK_EQ_INT(like.stride[3], 1);
    memest_shape_like(&like, &q);
    CHECK_EQ_INT(like.stride[1], q.stride[1]);
    CHECK_EQ_INT(like.stride[2], q.stride[2]);
    /* a slice x[:, :3] of contiguous [4,6]: strides (3, 1) */
    struct memest_shape sl2 = {.ndim = 2, .size = {4, 3}, .stride = {6, 1}};
    memest_shape_like(&like, &sl2);
    CHECK_EQ_INT(like.stride[0], 3);
    CHECK_EQ_INT(like.stride[1], 1);

    /* broadcasting: [8,1,6,1] with [7,1,5] -> [8,7,6,5] (PyTorch docs) */
    struct memest_shape b1 = mk(4, (int64_t[]){8, 1, 6, 1}), b2 = mk(3, (int64_t[]){7, 1, 5}), r;
    CHECK(memest_shape_broadcast(&b1, &b2, &r));
    CHECK_EQ_INT(r.ndim, 4);
    CHECK_EQ_INT(r.size[1], 7);
    CHECK_EQ_INT(r.size[3], 5);
    struct memest_shape b3 = mk(1, (int64_t[]){3}), b4 = mk(1, (int64_t[]){4});
    CHECK(!memest_shape_broadcast(&b3, &b4, &r));

    CHECK_EQ_INT(memest_wrap_dim(-1, 4), 3);
    CHECK_EQ_INT(memest_wrap_dim(4, 4), -1);
    CHECK_EQ_INT(memest_wrap_dim(-5, 4), -1);

    char buf[64];
    CHECK_STR_EQ(memest_shape_str(&a, buf, sizeof buf), "[2, 3, 4]");
    return CHECK_DONE();
}
