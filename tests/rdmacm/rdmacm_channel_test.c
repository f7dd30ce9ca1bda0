/* SPDX-License-Identifier: BSD-3-Clause */
/* An event channel destroyed while a thread waits in rdma_get_cm_event (rping's CM
 * thread, whose main returns meanwhile), built against the system's <rdma/rdma_cma.h>
 * and run on droce's librdmacm (droce-run ... rdmacm_channel_test ADDRESS):
 *  - 40 rounds: an event wakes the waiter while main destroys its id and the channel;
 *    the waiter may get the event, or wait on, never fail: on rdma-core it stays blocked
 *    in read() on the closed descriptor's file (rping exits -1 when its CM thread gets
 *    an error; seen in rdmacm_tools);
 *  - a call after the destroy fails with EBADF;
 *  - rdma_destroy_id returns once the id's events another thread holds are acked.
 * Prints "ok: ..." lines and exits 0, or says what failed and exits 1. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct waiter {
    struct rdma_event_channel *ch;
    atomic_int entering; /* about to call rdma_get_cm_event */
    atomic_int returned;
    atomic_int err; /* 0: it got an event */
};

static void *wait_event(void *arg) {
    struct waiter *w = arg;
    struct rdma_cm_event *ev = NULL;
    atomic_store(&w->entering, 1);
    int rc = rdma_get_cm_event(w->ch, &ev);
    atomic_store(&w->err, rc == 0 ? 0 : errno);
    atomic_store(&w->returned, 1);
    if (rc == 0)
        rdma_ack_cm_event(ev); /* main's rdma_destroy_id waits for it */
    return NULL;
}

static int fail(const char *what) {
    fprintf(stderr, "FAIL: %s (errno %d: %s)\n", what, errno, strerror(errno));
    return 1;
}

/* One round: a thread waits on a new channel; ADDR_RESOLVED wakes it while main destroys
 * the id (its event goes) and the channel at once. The waiter may get the event (it was
 * quick), or wait on; it must not fail. 1 when it failed. */
static int round_trip(const struct sockaddr_in *dst, int *got, int *waiting) {
    static struct waiter ws[64];
    static int used;
    if (used == 64)
        return fail("too many rounds");
    struct waiter *w = &ws[used++];
    w->ch = rdma_create_event_channel();
    if (w->ch == NULL)
        return fail("rdma_create_event_channel");
    struct rdma_cm_id *id = NULL;
    if (rdma_create_id(w->ch, &id, NULL, RDMA_PS_TCP) != 0)
        return fail("rdma_create_id");
    pthread_t t;
    if (pthread_create(&t, NULL, wait_event, w) != 0)
        return fail("pthread_create");
    while (!atomic_load(&w->entering))
        usleep(1000);
    usleep(20 * 1000); /* the waiter is in rdma_get_cm_event */
    if (rdma_resolve_addr(id, NULL, (struct sockaddr *)dst, 2000) != 0)
        return fail("rdma_resolve_addr");
    rdma_destroy_id(id);
    rdma_destroy_event_channel(w->ch);
    usleep(50 * 1000);
    if (atomic_load(&w->returned) && atomic_load(&w->err) != 0) {
        fprintf(stderr,
                "FAIL: the waiter failed (errno %d: %s) when its channel was destroyed; "
                "rdma-core's stays blocked\n",
                atomic_load(&w->err), strerror(atomic_load(&w->err)));
        return 1;
    }
    if (atomic_load(&w->returned))
        ++*got;
    else
        ++*waiting;
    pthread_detach(t);
    return 0;
}

/* rdma_destroy_id while another thread holds the id's event: the destroy returns only
 * after that thread acked it (rdma-core's rule; the holder may still use the id). */
static atomic_int acking;

static void *hold_then_ack(void *arg) {
    struct rdma_cm_event *ev = NULL;
    if (rdma_get_cm_event(arg, &ev) != 0)
        return NULL;
    usleep(200 * 1000);
    atomic_store(&acking, 1);
    rdma_ack_cm_event(ev);
    return NULL;
}

static int destroy_waits_for_ack(const struct sockaddr_in *dst) {
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *id = NULL;
    if (ch == NULL || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0)
        return fail("rdma_create_event_channel / rdma_create_id");
    if (rdma_resolve_addr(id, NULL, (struct sockaddr *)dst, 2000) != 0)
        return fail("rdma_resolve_addr");
    pthread_t t;
    if (pthread_create(&t, NULL, hold_then_ack, ch) != 0)
        return fail("pthread_create");
    usleep(50 * 1000); /* it has the event and holds it */
    if (rdma_destroy_id(id) != 0)
        return fail("rdma_destroy_id");
    if (!atomic_load(&acking)) {
        fprintf(stderr, "FAIL: rdma_destroy_id returned while another thread held its event\n");
        return 1;
    }
    pthread_join(t, NULL);
    rdma_destroy_event_channel(ch);
    printf("ok: rdma_destroy_id waits for the ack of an event another thread holds\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s IPV4_ADDRESS_TO_RESOLVE\n", argv[0]);
        return 2;
    }
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(7471)};
    if (inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1)
        return fail("inet_pton");
    if (destroy_waits_for_ack(&dst) != 0)
        return 1;
    int got = 0, waiting = 0;
    for (int i = 0; i < 40; ++i)
        if (round_trip(&dst, &got, &waiting) != 0)
            return 1;
    printf("ok: 40 channels destroyed under their waiter: none failed (%d got the event "
           "first, %d wait on)\n",
           got, waiting);

    struct rdma_event_channel *ch = rdma_create_event_channel();
    if (ch == NULL)
        return fail("rdma_create_event_channel");
    rdma_destroy_event_channel(ch);
    struct rdma_cm_event *ev = NULL;
    if (rdma_get_cm_event(ch, &ev) == 0 || errno != EBADF) {
        fprintf(stderr, "FAIL: rdma_get_cm_event on a destroyed channel: want EBADF, got %d\n",
                errno);
        return 1;
    }
    printf("ok: a call after the destroy fails with EBADF\n");
    return 0; /* the waiters still blocked go with the process */
}
