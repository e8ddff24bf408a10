// Bullet's closest points of a box and a triangle (btGjkPairDetector with btGjkEpaPenetrationDepthSolver, as
// RocketSim's Bullet runs them between a car's hitbox and a mesh triangle), for cases read from stdin, one per
// line: box centre (3), box axes as basis columns (9), triangle vertices (9), all in Bullet units (50 uu).
//     gjk_probe HALF_X HALF_Y HALF_Z BREAKING_THRESHOLD < cases
// Prints per case: found (0/1), normal on the triangle (3), point on the triangle (3), distance, Bullet's
// m_lastUsedMethod (1: GJK, 3: EPA) and m_degenerateSimplex.
#include "BulletCollision/CollisionShapes/btBoxShape.h"
#include "BulletCollision/CollisionShapes/btTriangleShape.h"
#include "BulletCollision/NarrowPhaseCollision/btGjkPairDetector.h"
#include "BulletCollision/NarrowPhaseCollision/btVoronoiSimplexSolver.h"
#include "BulletCollision/NarrowPhaseCollision/btGjkEpaPenetrationDepthSolver.h"
#include <cstdio>
#include <cstdlib>
struct Res : public btDiscreteCollisionDetectorInterface::Result {
	int found = 0; btVector3 n, p; btScalar d;
	void setShapeIdentifiersA(int, int) override {}
	void setShapeIdentifiersB(int, int) override {}
	void addContactPoint(const btVector3& normal, const btVector3& point, btScalar depth) override { found = 1; n = normal; p = point; d = depth; }
};
int main(int argc, char** argv) {
	btVector3 half(atof(argv[1]), atof(argv[2]), atof(argv[3])); btScalar threshold = atof(argv[4]);
	btBoxShape box(half);
	float c[3], b[9], v[9];
	while (scanf("%f %f %f", &c[0], &c[1], &c[2]) == 3) {
		for (int i = 0; i < 9; i++) scanf("%f", &b[i]);
		for (int i = 0; i < 9; i++) scanf("%f", &v[i]);
		btTriangleShape tri(btVector3(v[0], v[1], v[2]), btVector3(v[3], v[4], v[5]), btVector3(v[6], v[7], v[8]));
		tri.setMargin(0);
		btVoronoiSimplexSolver simplex; btGjkEpaPenetrationDepthSolver epa;
		btGjkPairDetector gjk(&box, &tri, &simplex, &epa);
		btGjkPairDetector::ClosestPointInput in;
		btScalar maxd = box.getMargin() + tri.getMargin() + threshold;
		in.m_maximumDistanceSquared = maxd * maxd;
		btMatrix3x3 basis(b[0], b[3], b[6], b[1], b[4], b[7], b[2], b[5], b[8]);  // columns given
		in.m_transformA = btTransform(basis, btVector3(c[0], c[1], c[2]));
		in.m_transformB.setIdentity();
		Res r; gjk.getClosestPoints(in, r, false);
		printf("%d %.9g %.9g %.9g %.9g %.9g %.9g %.9g %d %d\n", r.found, r.n.x(), r.n.y(), r.n.z(), r.p.x(), r.p.y(), r.p.z(), r.found ? r.d : 0.0f, gjk.m_lastUsedMethod, gjk.m_degenerateSimplex);
	}
}
