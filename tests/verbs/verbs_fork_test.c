/* SPDX-License-Identifier: BSD-3-Clause */
/* A verbs program that forks after its first verb (as fio's job processes would without
 * thread=1): droce's engine runs on the parent's threads, which the child does not have.
 * The child's verbs must fail at once with ENODEV (and a message saying why and what to
 * use instead), never wait forever; its exit must not tear down the parent's engine; the
 * parent goes on using its device. Prints "ok"/"FAIL" lines; exit 0 when all pass. */
#include <infiniband/verbs.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        printf((cond) ? "ok: " : "FAIL: ");                                                        \
        failures += !(cond);                                                                       \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
    } while (0)

static int child(struct ibv_device *parents_dev) {
    int n = -1;
    errno = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    const int e1 = errno;
    errno = 0;
    struct ibv_context *ctx = ibv_open_device(parents_dev);
    const int e2 = errno;
    int bad = !(list != NULL && n == 0 && e1 == ENODEV && ctx == NULL && e2 == ENODEV);
    printf("%s: child: no device (list %d, errno %d), ibv_open_device refused (errno %d)\n",
           bad ? "FAIL" : "ok", n, e1, e2);
    fflush(stdout);
    if (list != NULL)
        ibv_free_device_list(list);
    return bad;
}

int main(void) {
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    CHECK(list != NULL && n == 1, "parent: %d device(s)", n);
    if (list == NULL || n < 1)
        return 1;
    struct ibv_context *ctx = ibv_open_device(list[0]);
    CHECK(ctx != NULL, "parent: ibv_open_device");
    pid_t pid = fork();
    if (pid == 0)
        _exit(child(list[0])); /* exit handlers of the parent's engine must not run here */
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child ended by itself, status %d",
          status);
    /* The same through exit() (atexit handlers run in the child): the parent's engine
     * survives it. */
    pid = fork();
    if (pid == 0)
        exit(child(list[0]));
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child ended through exit(), status %d",
          status);
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct ibv_cq *cq = pd != NULL ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
    CHECK(pd != NULL && cq != NULL, "parent: the device still works after its children");
    if (cq != NULL)
        ibv_destroy_cq(cq);
    if (pd != NULL)
        ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
